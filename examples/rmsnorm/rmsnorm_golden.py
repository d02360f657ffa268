"""Reference for rmsnorm: x / sqrt(sum(x^2, -1) / N + 1e-6) * weight, weight shaped [1, N]."""
import torch

EPS = 1e-6


def rmsnorm_golden(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    mean_sq = (x * x).sum(dim=-1, keepdim=True) / x.shape[-1]
    return x / torch.sqrt(mean_sq + EPS) * weight
