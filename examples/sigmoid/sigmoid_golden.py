"""Reference for sigmoid."""
import torch


def sigmoid_golden(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x)
