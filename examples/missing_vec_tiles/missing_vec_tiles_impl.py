"""BROKEN on purpose: an elementwise kernel that never calls pypto.set_vec_tile_shapes.

Expected in every mode: RenderedParserError "RuntimeError: Errcode: F21004! op [MULS]tile shape not set" while
tracing the first call (e.node.lineno is the `out[:] = ...` line), plus a stderr line
"ERROR:root:Record function missing_vec_tiles_kernel failed: ...".
"""
import pypto
import torch


@pypto.frontend.jit
def missing_vec_tiles_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    y: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    # Bug: no pypto.set_vec_tile_shapes(...) before the vector ops.
    out[:] = x * 2.0 + y


def missing_vec_tiles_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    missing_vec_tiles_kernel(x, y, out)
    return out
