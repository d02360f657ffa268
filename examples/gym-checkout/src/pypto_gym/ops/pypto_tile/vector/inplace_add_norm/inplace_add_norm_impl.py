"""Add then RMS-normalise, in place, bf16, three outputs.

x_sum = x1 + x2; rstd = 1 / sqrt(mean(x_sum ** 2, -1) + EPS); y = x_sum * rstd * gamma.
The kernel writes y, x_sum and rstd; the wrapper then copies y into x1 and x_sum into x2 and returns
(x1, x2, rstd), so the caller's inputs hold the results, as in-place operators do.
Shapes: x1, x2 [batch, seq, hidden], gamma [1, 1, hidden], rstd [batch, seq, 1]; maths in fp32.
"""
import pypto
import torch

EPS = 1e-6
# Rows of a tile: this host's pypto reports DAV_2201; another arch would get larger tiles.
SEQ_TILE = 8 if "2201" in str(pypto.platform.npuarch) else 16
BF16, FP32 = pypto.DT_BF16, pypto.DT_FP32


@pypto.frontend.jit
def inplace_add_norm_kernel(
    x1: pypto.Tensor([], BF16),
    x2: pypto.Tensor([], BF16),
    gamma: pypto.Tensor([], BF16),
    y: pypto.Tensor([], BF16),
    x_sum: pypto.Tensor([], BF16),
    rstd: pypto.Tensor([], BF16),
):
    batch, seq, hidden = x1.shape
    pypto.set_vec_tile_shapes(1, SEQ_TILE, hidden)  # whole rows per tile: the mean stays inside one tile
    for b, _ in pypto.loop_unroll(0, batch, 1, name="BATCH", idx_name="b", unroll_list=[1]):
        a = pypto.cast(pypto.view(x1, [1, seq, hidden], [b, 0, 0]), FP32)
        c = pypto.cast(pypto.view(x2, [1, seq, hidden], [b, 0, 0]), FP32)
        total = a + c
        inv = 1.0 / pypto.sqrt(pypto.sum(total * total, dim=-1, keepdim=True) / float(hidden) + EPS)
        pypto.assemble(pypto.cast(total * inv * pypto.cast(gamma, FP32), BF16), [b, 0, 0], y)
        pypto.assemble(pypto.cast(total, BF16), [b, 0, 0], x_sum)
        pypto.assemble(pypto.cast(inv, BF16), [b, 0, 0], rstd)


def npu_inplace_add_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor):
    y, x_sum = torch.empty_like(x1), torch.empty_like(x2)
    rstd = torch.empty((x1.shape[0], x1.shape[1], 1), dtype=x1.dtype, device=x1.device)
    inplace_add_norm_kernel(x1, x2, gamma, y, x_sum, rstd)
    x1.copy_(y)
    x2.copy_(x_sum)
    return x1, x2, rstd
