"""Reference for wrong_maths: the specified operator x * 2.0 + y."""
import torch


def wrong_maths_golden(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * 2.0 + y
