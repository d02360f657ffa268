"""Reference for oversized_tile (the intended maths: x * 2.0)."""
import torch


def oversized_tile_golden(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0
