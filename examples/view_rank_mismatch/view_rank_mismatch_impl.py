"""BROKEN on purpose: pypto.view of a 2-D tensor with three offsets.

Expected: RenderedParserError "Errcode: F21004! lhs.size():2, rhs.size():3, func Add, file tensor_offset.h" at the
first call. Tracing accepts the view; the MergeViewAssemble compile pass rejects it, so nothing reaches stderr or the
plog and the diagnostic points at line 1 of this file rather than at the view.
"""
import pypto
import torch

ROW_TILE = 16


@pypto.frontend.jit
def view_rank_mismatch_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    rows = x.shape[0]
    cols = x.shape[1]
    pypto.set_vec_tile_shapes(ROW_TILE, cols)
    for i in pypto.loop(rows // ROW_TILE, name="ROW_LOOP", idx_name="i"):
        # Bug: a 2-D view shape with 3 offsets (one offset per dim is required).
        tile = pypto.view(x, [ROW_TILE, cols], [i * ROW_TILE, 0, 0])
        pypto.assemble(tile * 2.0, [i * ROW_TILE, 0], out)


def view_rank_mismatch_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    view_rank_mismatch_kernel(x, out)
    return out
