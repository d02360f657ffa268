"""Reference for view_rank_mismatch (the intended maths: x * 2.0)."""
import torch


def view_rank_mismatch_golden(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0
