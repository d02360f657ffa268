"""axpy with a fixed alpha: out = ALPHA * x + y over a [rows, cols] fp32 tensor, in ROW_TILE-row vec tiles."""
import pypto
import torch

from common.tiling import ROW_TILE

ALPHA = 2.0


@pypto.frontend.jit
def axpy_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    y: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(ROW_TILE, x.shape[-1])
    out[:] = x * ALPHA + y


def axpy_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    axpy_kernel(x, y, out)
    return out
