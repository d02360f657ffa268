"""softmax over the last dim of a 2-D fp32 tensor: exp(x - rowmax) / sum(exp(x - rowmax))."""
import pypto
import torch

ROW_TILE = 8


@pypto.frontend.jit
def softmax_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    cols = x.shape[-1]
    # A tile holds whole rows, so each row's max and sum are reduced inside one tile.
    pypto.set_vec_tile_shapes(ROW_TILE, cols)
    shifted = x - pypto.amax(x, dim=-1, keepdim=True)
    numer = pypto.exp(shifted)
    out[:] = numer / pypto.sum(numer, dim=-1, keepdim=True)


def softmax_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    softmax_kernel(x, out)
    return out
