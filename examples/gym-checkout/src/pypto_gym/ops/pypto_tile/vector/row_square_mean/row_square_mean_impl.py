"""Mean of squares per row: out[r, 0] = sum(x[r, :] ** 2) / cols. The jit kernel sets no run mode (NPU first)."""
import pypto
import torch

from common.tiling import ROW_TILE


@pypto.frontend.jit
def row_square_mean_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    cols = x.shape[-1]
    pypto.set_vec_tile_shapes(ROW_TILE, cols)  # whole rows per tile: the sum stays inside one tile
    out[:] = pypto.sum(x * x, dim=-1, keepdim=True) / float(cols)


def row_square_mean(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty((x.shape[0], 1), dtype=x.dtype, device=x.device)
    row_square_mean_kernel(x, out)
    return out
