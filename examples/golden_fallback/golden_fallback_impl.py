"""CHEAT on purpose: the wrapper falls back to torch when the kernel fails, so the "result" is the golden itself.

The kernel has no vec tiles, so it always raises (F21004 tile shape not set); the except branch then returns
torch.sigmoid(x), which is bit-identical to the golden. A checker must flag this (0.0 max diff, no kernel output).
"""
import pypto
import torch


@pypto.frontend.jit
def golden_fallback_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    # Bug that forces the fallback: no pypto.set_vec_tile_shapes(...).
    out[:] = pypto.sigmoid(x)


def golden_fallback_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    try:
        golden_fallback_kernel(x, out)
    except Exception:  # the cheat: swallow the kernel failure and compute the answer in torch
        return torch.sigmoid(x)
    return out
