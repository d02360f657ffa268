"""BROKEN on purpose: the kernel rebinds the local name `out` instead of writing into the output tensor.

`out = x + y` makes `out` name a new tensor inside the kernel; the output argument is never written
(`out[:] = x + y` would write it). PyPTO 0.2.0 accepts this silently: it compiles and runs, the cost model
reports 0 submitted tasks, and the caller's buffer keeps whatever torch.empty_like left in it.
"""
import pypto
import torch


@pypto.frontend.jit
def unwritten_output_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    y: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 64)
    out = x + y  # Bug: rebinds the name; should be out[:] = x + y.


def unwritten_output_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    unwritten_output_kernel(x, y, out)
    return out
