"""Multi-head non-causal attention: out = softmax(q @ k^T * D**-0.5) @ v, q/k/v/out shaped [H, S, D], fp32."""
import pypto
import torch


@pypto.frontend.jit
def attention_kernel(
    q: pypto.Tensor([], pypto.DT_FP32),
    k: pypto.Tensor([], pypto.DT_FP32),
    v: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    seq = q.shape[1]
    head_dim = q.shape[2]
    scale = 1.0 / (head_dim ** 0.5)
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [64, 64])
    # One head, 8 query rows, the whole key axis per vec tile: softmax rows reduce inside one tile.
    pypto.set_vec_tile_shapes(1, 8, seq)
    scores = pypto.matmul(q, k, pypto.DT_FP32, b_trans=True) * scale
    shifted = scores - pypto.amax(scores, dim=-1, keepdim=True)
    numer = pypto.exp(shifted)
    probs = numer / pypto.sum(numer, dim=-1, keepdim=True)
    out[:] = pypto.matmul(probs, v, pypto.DT_FP32)


def attention_wrapper(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(q)
    attention_kernel(q, k, v, out)
    return out
