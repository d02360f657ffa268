"""Reference for missing_vec_tiles (the intended maths: x * 2.0 + y)."""
import torch


def missing_vec_tiles_golden(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * 2.0 + y
