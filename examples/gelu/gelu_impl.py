"""gelu, tanh approximation: 0.5*x*(1 + tanh(c*(x + 0.044715*x^3))), c = sqrt(2/pi).

PyPTO 0.2.0 has no tanh or erf, so the kernel uses the identity 0.5*(1 + tanh(z)) = sigmoid(2z):
gelu_tanh(x) = x * sigmoid(2c * (x + 0.044715*x^3)). It is the same function as
torch.nn.functional.gelu(x, approximate="tanh"), which the golden uses.
"""
import math

import pypto
import torch

CUBIC = 0.044715
TWO_C = 2.0 * math.sqrt(2.0 / math.pi)


@pypto.frontend.jit
def gelu_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 64)
    # Scalars go on the right: float * Tensor is not supported by pypto 0.2.0.
    inner = x + x * x * x * CUBIC
    out[:] = x * pypto.sigmoid(inner * TWO_C)


def gelu_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    gelu_kernel(x, out)
    return out
