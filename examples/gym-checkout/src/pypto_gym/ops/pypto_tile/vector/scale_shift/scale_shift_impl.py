"""Scale and shift: y = x * scale + shift (scalars). The jit kernel sets no run mode (NPU first)."""
import pypto
import torch


@pypto.frontend.jit
def scale_shift_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    y: pypto.Tensor([], pypto.DT_FP32),
    scale: float,
    shift: float,
):
    pypto.set_vec_tile_shapes(16, 64)
    y[:] = x * scale + shift


def scale_shift(x: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    y = torch.empty_like(x)
    scale_shift_kernel(x, y, float(scale), float(shift))
    return y
