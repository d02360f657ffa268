"""Reference for matmul."""
import torch


def matmul_golden(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)
