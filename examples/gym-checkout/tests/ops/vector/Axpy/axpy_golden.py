"""Reference for axpy (alpha fixed at 2)."""
import torch


def axpy_golden(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * 2.0 + y
