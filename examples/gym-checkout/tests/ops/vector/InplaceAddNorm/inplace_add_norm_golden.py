"""Reference for inplace_add_norm: writes y into x1 and x1 + x2 into x2, returns rstd (fp32 maths, bf16 results)."""
import torch

EPS = 1e-6


def inplace_add_norm_golden(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor):
    total = x1.float() + x2.float()
    inv = 1.0 / torch.sqrt((total * total).mean(dim=-1, keepdim=True) + EPS)
    x1.copy_((total * inv * gamma.float()).to(x1.dtype))
    x2.copy_(total.to(x2.dtype))
    return x1, x2, inv.to(x1.dtype)
