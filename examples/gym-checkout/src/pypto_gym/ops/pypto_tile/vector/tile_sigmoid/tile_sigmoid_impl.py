"""Sigmoid of a [1, cols] row walked in 16 x 512 tiles: each tile has one valid row of 16 (a partial tile)."""
import pypto
import torch

TILE_ROWS, TILE_COLS = 16, 512


@pypto.frontend.jit
def tile_sigmoid_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    cols = x.shape[1]
    pypto.set_vec_tile_shapes(TILE_ROWS, TILE_COLS)
    for c in pypto.loop(cols // TILE_COLS, name="COLS", idx_name="c"):
        tile = pypto.view(x, [TILE_ROWS, TILE_COLS], [0, c * TILE_COLS], valid_shape=[1, TILE_COLS])
        pypto.assemble(pypto.sigmoid(tile), [0, c * TILE_COLS], out)


def tile_sigmoid_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    tile_sigmoid_kernel(x, out)
    return out
