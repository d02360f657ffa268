"""Reference for unwritten_output: x + y."""
import torch


def unwritten_output_golden(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y
