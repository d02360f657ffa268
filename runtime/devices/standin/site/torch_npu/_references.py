"""CPU references of torch_npu fused ops that goldens call, from torch_npu's documented semantics
(docs/realops.md §12): outputs, dtypes and the returned tuple as the NPU gives them, computed in float32.

An argument the reference does not cover (another quant dtype, int4 packed in int32, an NZ weight) raises
NeedsRealNpu naming the op and the argument, as an op without a reference does.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

INT8_MAX = 127.0
INT8_MIN = -128.0


class ArgumentNeedsNpu(RuntimeError):
    """An argument of a referenced op that only the NPU's kernel handles; the stand-in says which."""


def _refuse(op: str, what: str) -> ArgumentNeedsNpu:
    return ArgumentNeedsNpu(f"torch_npu.{op}() needs a real NPU for {what}: the SIM stand-in's CPU reference "
                            f"covers only the documented plain case")


def _norm_dims(x: torch.Tensor, gamma: torch.Tensor) -> tuple[int, ...]:
    return tuple(range(x.dim() - gamma.dim(), x.dim()))


def npu_rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps) over gamma's trailing dims; (y in x's dtype,
    rstd float32 with those dims kept as 1)."""
    dims = _norm_dims(x, gamma)
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return (xf * rstd * gamma.float()).to(x.dtype), rstd


def npu_add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor,
                     epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(rms_norm(x1 + x2), its rstd, x1 + x2): the sum in x1's dtype, the norm computed from it in float32."""
    x = (x1.float() + x2.float()).to(x1.dtype)
    y, rstd = npu_rms_norm(x, gamma, epsilon)
    return y, rstd, x


def _rotate(x: torch.Tensor, mode: str) -> torch.Tensor:
    if mode == "half":
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    if mode == "interleave":
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((-x2, x1), dim=-1).flatten(-2)
    raise _refuse("npu_rotary_mul", f"rotary_mode={mode!r}")


def npu_rotary_mul(x: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half") -> torch.Tensor:
    """x * r1 + rotate(x) * r2 (RoPE: r1 = cos, r2 = sin), in x's dtype."""
    xf = x.float()
    return (xf * r1.float() + _rotate(xf, rotary_mode) * r2.float()).to(x.dtype)


def npu_swiglu(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """A * sigmoid(A) * B with A, B the two halves of x along dim; in x's dtype."""
    a, b = torch.chunk(x.float(), 2, dim=dim)
    return (a * torch.sigmoid(a) * b).to(x.dtype)


def _to_int8(values: torch.Tensor) -> torch.Tensor:
    """Round half to even, saturate to int8 (the NPU's CAST_RINT)."""
    return torch.round(values).clamp(INT8_MIN, INT8_MAX).to(torch.int8)


def npu_dynamic_quant(x: torch.Tensor, *, smooth_scales: torch.Tensor | None = None,
                      group_index: torch.Tensor | None = None,
                      dst_type: Any = torch.int8) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token symmetric int8: scale = max|x * smooth| / 127 per row (float32, x.shape[:-1]),
    y = round(x * smooth / scale) as int8."""
    if group_index is not None:
        raise _refuse("npu_dynamic_quant", "group_index (MoE smooth scales)")
    if dst_type not in (torch.int8, None):
        raise _refuse("npu_dynamic_quant", f"dst_type={dst_type}")
    xf = x.float() * (smooth_scales.float() if smooth_scales is not None else 1.0)
    scale = xf.abs().amax(dim=-1) / INT8_MAX
    return _to_int8(xf / scale.unsqueeze(-1)), scale


def _per_axis(values: torch.Tensor, x: torch.Tensor, axis: int) -> torch.Tensor:
    """A 1-D per-channel tensor laid along `axis` of x (a single value broadcasts)."""
    if values.numel() == 1:
        return values.reshape(())
    shape = [1] * x.dim()
    shape[axis] = values.numel()
    return values.reshape(shape)


def npu_quantize(x: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor | None, dtype: Any,
                 axis: int = 1, div_mode: bool = True) -> torch.Tensor:
    """round(x / scales + zero_points) (div_mode) or round(x * scales + zero_points), per channel along axis,
    as int8 for dtype torch.qint8 / torch.int8."""
    if dtype not in (torch.qint8, torch.int8):
        raise _refuse("npu_quantize", f"dtype={dtype}")
    xf, s = x.float(), _per_axis(scales.float(), x, axis)
    zp = _per_axis(zero_points.float(), x, axis) if zero_points is not None else 0.0
    return _to_int8((xf / s if div_mode else xf * s) + zp)


def npu_quant_matmul(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor, *, offset: torch.Tensor | None = None,
                     pertoken_scale: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                     output_dtype: torch.dtype | None = None, **npu_only: Any) -> torch.Tensor:
    """int8 @ int8 accumulated exactly, + bias, * scale (per output column) * pertoken_scale (per row),
    + offset; as output_dtype (int8, rounded and saturated, when None)."""
    given = sorted(k for k, v in npu_only.items() if v is not None)
    if given:
        raise _refuse("npu_quant_matmul", ", ".join(given))
    if x1.dtype != torch.int8 or x2.dtype != torch.int8:
        raise _refuse("npu_quant_matmul", f"inputs of {x1.dtype} and {x2.dtype} (the reference takes int8)")
    if scale.dtype == torch.int64:
        raise _refuse("npu_quant_matmul", "an int64 scale (npu_trans_quant_param)")
    acc = torch.matmul(x1.to(torch.int64), x2.to(torch.int64)).double()  # exact: int8 products sum in int64
    if bias is not None:
        acc = acc + bias.double()
    if output_dtype == torch.int32:
        return acc.to(torch.int32)
    out = acc * scale.double()
    if pertoken_scale is not None:
        out = out * pertoken_scale.double().unsqueeze(-1)
    if offset is not None:
        out = out + offset.double()
    return _to_int8(out) if output_dtype in (None, torch.int8) else out.to(output_dtype)


REFERENCES: dict[str, Callable[..., Any]] = {fn.__name__: fn for fn in (
    npu_rms_norm, npu_add_rms_norm, npu_rotary_mul, npu_swiglu, npu_dynamic_quant, npu_quantize, npu_quant_matmul)}
