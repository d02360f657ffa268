"""BROKEN on purpose: a matmul kernel that never calls pypto.set_cube_tile_shapes.

Expected in every mode (a kernel bug, not a SIM limitation): RenderedParserError "RuntimeError: Errcode: FC4000!
Invalid tile values: kL0=0, kL1a=0, kL1b=0, mL0=0, mL1=0, nL0=0, nL1=0" while tracing the first call, plus a stderr
line "ERROR:root:Record function missing_cube_tiles_kernel failed: ...".
"""
import pypto
import torch


@pypto.frontend.jit
def missing_cube_tiles_kernel(
    a: pypto.Tensor([], pypto.DT_FP32),
    b: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    # Bug: no pypto.set_cube_tile_shapes(...) before pypto.matmul.
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)


def missing_cube_tiles_wrapper(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    missing_cube_tiles_kernel(a, b, out)
    return out
