"""Reference for gelu: the tanh approximation (the kernel uses the same approximation)."""
import torch


def gelu_golden(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")
