"""Compare a kernel's result with the golden: diff magnitudes, mismatch share, non-finite counts.

Runs in the job process (needs torch). Every number is finite or a string, so reports stay
strict JSON; magnitudes are kept even for garbage, because the dashboard shows the garbage.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

# Relative diff denominators below this count as zero (avoids inf for exact zeros in the golden).
REL_FLOOR = 1e-12


def to_tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu")
    return torch.as_tensor(np.asarray(value))


def torch_default_tolerance(actual: Any) -> tuple[float, float]:
    """torch.testing.assert_close's defaults for the dtype."""
    dtype = to_tensor(actual).dtype
    return {
        torch.float16: (1e-3, 1e-5),
        torch.bfloat16: (1.6e-2, 1e-5),
        torch.float32: (1.3e-6, 1e-5),
        torch.float64: (1e-7, 1e-7),
    }.get(dtype, (0.0, 0.0))


def _finite_max(t: torch.Tensor) -> float | None:
    finite = t[torch.isfinite(t)]
    return float(finite.max()) if finite.numel() else None


def compare(output: Any, golden: Any, rtol: float, atol: float) -> dict[str, Any]:
    """Metrics of one output against its golden (allclose semantics: |o-g| <= atol + rtol*|g|)."""
    out = to_tensor(output)
    ref = to_tensor(golden)
    m: dict[str, Any] = {
        "rtol": rtol, "atol": atol,
        "output_shape": list(out.shape), "golden_shape": list(ref.shape),
        "output_dtype": str(out.dtype).replace("torch.", ""), "golden_dtype": str(ref.dtype).replace("torch.", ""),
    }
    m["shape_match"] = m["output_shape"] == m["golden_shape"]
    m["dtype_match"] = m["output_dtype"] == m["golden_dtype"]
    o = out.to(torch.float64) if not out.is_complex() else out.abs().to(torch.float64)
    g = ref.to(torch.float64) if not ref.is_complex() else ref.abs().to(torch.float64)
    m["numel"] = int(o.numel())
    m["nan_count"] = int(torch.isnan(o).sum())
    m["inf_count"] = int(torch.isinf(o).sum())
    m["output_abs_max"] = _finite_max(o.abs())
    m["golden_abs_max"] = _finite_max(g.abs())
    m["bit_identical"] = bool(m["shape_match"] and m["dtype_match"] and torch.equal(out, ref))
    if not m["shape_match"]:
        m.update(max_abs_diff=None, max_rel_diff=None, mean_abs_diff=None,
                 mismatch_count=m["numel"], mismatch_ratio=1.0)
        return m
    diff = (o - g).abs()
    both_finite = torch.isfinite(o) & torch.isfinite(g)
    d = diff[both_finite]
    rel = d / g.abs()[both_finite].clamp_min(REL_FLOOR)
    m["finite_pairs"] = int(d.numel())  # elements where both sides are finite: the mean's weight
    m["max_abs_diff"] = float(d.max()) if d.numel() else None
    m["mean_abs_diff"] = float(d.mean()) if d.numel() else None
    m["max_rel_diff"] = float(rel.max()) if rel.numel() else None
    close = diff <= atol + rtol * g.abs()
    close |= (o == g)  # equal infinities are close, as in allclose
    mismatches = int((~close).sum())
    m["mismatch_count"] = mismatches
    m["mismatch_ratio"] = mismatches / m["numel"] if m["numel"] else 0.0
    for key in ("max_abs_diff", "max_rel_diff", "mean_abs_diff"):
        if m[key] is not None and not math.isfinite(m[key]):
            m[key] = None
    return m


def combine(per_output: list[dict[str, Any]]) -> dict[str, Any]:
    """One metrics record for several outputs: worst magnitudes, summed counts."""
    if len(per_output) == 1:
        return per_output[0]
    first = per_output[0]

    def worst(key: str) -> float | None:
        values = [p[key] for p in per_output if p.get(key) is not None]
        return max(values) if values else None

    numel = sum(p["numel"] for p in per_output)
    mism = sum(p["mismatch_count"] for p in per_output)
    return {
        "rtol": first["rtol"], "atol": first["atol"],
        "shape_match": all(p["shape_match"] for p in per_output),
        "dtype_match": all(p["dtype_match"] for p in per_output),
        "numel": numel, "mismatch_count": mism, "mismatch_ratio": mism / numel if numel else 0.0,
        "nan_count": sum(p["nan_count"] for p in per_output),
        "finite_pairs": sum(p.get("finite_pairs") or 0 for p in per_output),
        "inf_count": sum(p["inf_count"] for p in per_output),
        "max_abs_diff": worst("max_abs_diff"), "max_rel_diff": worst("max_rel_diff"),
        "mean_abs_diff": worst("mean_abs_diff"),
        "output_abs_max": worst("output_abs_max"), "golden_abs_max": worst("golden_abs_max"),
        "bit_identical": all(p["bit_identical"] for p in per_output),
        "outputs": per_output,
    }

