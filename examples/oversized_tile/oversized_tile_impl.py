"""BROKEN on purpose: a 128 x 512 fp32 vec tile (256 KB) cannot fit the 192 KB unified buffer (UB).

Expected: RenderedParserError "Errcode: FFFFFF! Run pass failed." at the first call; the real cause is only in
the plog: "Alloc tensor [..] size [262144] exceeds MEM_UB size [196608]!".
"""
import pypto
import torch


@pypto.frontend.jit
def oversized_tile_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    # Bug: 128 * 512 * 4 B = 256 KB per tile buffer, more than the whole UB (192 KB). 32 x 512 would fit.
    pypto.set_vec_tile_shapes(128, 512)
    out[:] = x * 2.0


def oversized_tile_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    oversized_tile_kernel(x, out)
    return out
