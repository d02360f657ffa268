"""out = x * 2 over a [1, 64, 256, 256] fp32 tensor in 1 x 1 x 16 x 256 tiles: 1,024 tasks.

Large but light: SIM reserves far more address space than it touches (docs/pypto.md §8).
"""
import pypto
import torch


@pypto.frontend.jit
def big_scale_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, 1, 16, 256)
    out[:] = x * 2.0


def big_scale_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    big_scale_kernel(x, out)
    return out
