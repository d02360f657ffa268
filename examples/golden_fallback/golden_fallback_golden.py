"""Reference for golden_fallback: sigmoid."""
import torch


def golden_fallback_golden(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x)
