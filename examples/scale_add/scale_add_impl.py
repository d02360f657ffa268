"""scale_add: out = x * 2.0 + y, elementwise on two fp32 tensors of the same shape."""
import pypto
import torch

SCALE = 2.0


@pypto.frontend.jit
def scale_add_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    y: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    # 32 x 64 fp32 tiles (8 KB each) divide every case shape in test_cases.json.
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = x * SCALE + y


def scale_add_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    scale_add_kernel(x, y, out)
    return out
