"""matmul: out[M, N] = a[M, K] @ b[K, N] in fp32 on the cube unit."""
import pypto
import torch


@pypto.frontend.jit
def matmul_kernel(
    a: pypto.Tensor([], pypto.DT_FP32),
    b: pypto.Tensor([], pypto.DT_FP32),
    out: pypto.Tensor([], pypto.DT_FP32),
):
    # [L0, L1] per axis m, k, n. fp32 needs k and n 16-element aligned; L1 % L0 == 0.
    # L0A = 32*128*4 B = 16 KB, L0B = 128*64*4 B = 32 KB, L0C = 32*64*4 B = 8 KB: inside 64/64/128 KB.
    # k tiles of 128 cover K <= 128 in one step, so no split-K partial sums change the fp32 rounding.
    pypto.set_cube_tile_shapes([32, 32], [128, 128], [64, 64])
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)


def matmul_wrapper(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    matmul_kernel(a, b, out)
    return out
