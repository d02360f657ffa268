"""tiling_bug: out = x * 0.5 + y on [M, 64], walked in 16-row slices. Deliberately wrong tiling.

The loop count rounds DOWN (rows // ROW_TILE), so when M is not a multiple of 16 the last rows
are never computed. SIM compiles and runs it without complaint (structure is fine); graph
verify sees the unwritten tail rows.
"""
import pypto
import torch

COLS = 64
ROW_TILE = 16


@pypto.frontend.jit
def tiling_bug_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
):
    rows = x.shape[0]
    pypto.set_vec_tile_shapes(ROW_TILE, COLS)
    for i in pypto.loop(rows // ROW_TILE, name="ROW_LOOP", idx_name="i"):  # BUG: drops the tail
        start = i * ROW_TILE
        x_tile = pypto.view(x, [ROW_TILE, COLS], [start, 0])
        y_tile = pypto.view(y, [ROW_TILE, COLS], [start, 0])
        pypto.assemble(x_tile * 0.5 + y_tile, [start, 0], out)


def tiling_bug_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    tiling_bug_kernel(x, y, out)
    return out
