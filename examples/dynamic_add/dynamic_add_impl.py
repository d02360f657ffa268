"""dynamic_add: out = x + y on [M, 64] fp32 with a DYNAMIC first dim, one compiled kernel for every M.

The kernel walks M in ROW_TILE-row slices (pypto.loop + pypto.view) and writes each slice back with
pypto.assemble. valid_shape clips the last slice when M is not a multiple of ROW_TILE.
"""
import pypto
import torch

COLS = 64
ROW_TILE = 16


@pypto.frontend.jit
def dynamic_add_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
):
    rows = x.shape[0]
    pypto.set_vec_tile_shapes(ROW_TILE, COLS)
    for i in pypto.loop((rows + ROW_TILE - 1) // ROW_TILE, name="ROW_LOOP", idx_name="i"):
        start = i * ROW_TILE
        valid = [pypto.min(start + ROW_TILE, rows) - start, COLS]
        x_tile = pypto.view(x, [ROW_TILE, COLS], [start, 0], valid_shape=valid)
        y_tile = pypto.view(y, [ROW_TILE, COLS], [start, 0], valid_shape=valid)
        pypto.assemble(x_tile + y_tile, [start, 0], out)


def dynamic_add_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    dynamic_add_kernel(x, y, out)
    return out
