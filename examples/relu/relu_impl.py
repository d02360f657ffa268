"""relu: out = max(x, 0), elementwise on one fp32 tensor."""
import pypto
import torch


@pypto.frontend.jit
def relu_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = pypto.relu(x)


def relu_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    relu_kernel(x, out)
    return out
