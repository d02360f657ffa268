"""BROKEN on purpose: compiles and runs, but computes x * 3.0 + y where the golden is x * 2.0 + y.

The error is exactly |x| per element (max about 3 to 4 for randn inputs), far outside 1e-3. Plain SIM never
writes outputs, so only a precision oracle (NPU, or graph verify on the CPU) can catch it.
"""
import pypto
import torch

SCALE = 3.0  # Bug: the operator is specified as x * 2.0 + y.


@pypto.frontend.jit
def wrong_maths_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    y: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x * SCALE + y


def wrong_maths_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    wrong_maths_kernel(x, y, out)
    return out
