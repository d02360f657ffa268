"""sigmoid: out = 1 / (1 + exp(-x)), elementwise on one fp32 tensor."""
import pypto
import torch


@pypto.frontend.jit
def sigmoid_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = pypto.sigmoid(x)


def sigmoid_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    sigmoid_kernel(x, out)
    return out
