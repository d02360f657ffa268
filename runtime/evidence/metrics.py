"""Compare a kernel's result with the golden: diff magnitudes, mismatch share, non-finite counts.

Runs in the job process (needs torch). Every number is finite or a string, so reports stay
strict JSON; magnitudes are kept even for garbage, because the dashboard shows the garbage.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from runtime.evidence import mismatch_map

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


# Dtypes whose values float64 holds exactly: counts and maxima are taken in the tensor's own dtype,
# which gives the same numbers as on a float64 copy without making one.
EXACT_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _values(t: torch.Tensor) -> torch.Tensor:
    """What is compared, in a dtype that holds it exactly: |z| for complex, float64 for integers."""
    if t.is_complex():
        return t.abs().to(torch.float64)
    return t if t.dtype in EXACT_FLOATS else t.to(torch.float64)


def _scan(t: torch.Tensor) -> tuple[int, int, float | None, torch.Tensor | None]:
    """NaN count, inf count, largest finite |x|, and the finite mask (None when every element is finite)."""
    finite = torch.isfinite(t)
    if bool(finite.all()):
        return 0, 0, (float(t.abs().max()) if t.numel() else None), None
    nan = int(torch.isnan(t).sum())
    kept = t[finite]
    return nan, t.numel() - int(finite.sum()) - nan, (float(kept.abs().max()) if kept.numel() else None), finite


def _range(t: torch.Tensor) -> tuple[float | None, float | None]:
    if not t.numel():
        return None, None
    low, high = torch.aminmax(t)
    return float(low), float(high)


def compare(output: Any, golden: Any, rtol: float, atol: float,
            where: mismatch_map.Accumulator | None = None) -> dict[str, Any]:
    """Metrics of one output against its golden (allclose semantics: |o-g| <= atol + rtol*|g|).

    `where`: fed the mismatch mask, for the mismatch map (runtime.evidence.mismatch_map); nothing when the shapes differ.

    Differences are taken in float64. The numbers equal those of the plain float64 formulation
    (tests/runtime/test_metrics_identity.py holds them to it, bit for bit); it only skips work:
    copies of exact dtypes, masks when all is finite, everything but a scan when bit-identical or all NaN."""
    out = to_tensor(output)
    ref = to_tensor(golden)
    m: dict[str, Any] = {
        "rtol": rtol, "atol": atol,
        "output_shape": list(out.shape), "golden_shape": list(ref.shape),
        "output_dtype": str(out.dtype).replace("torch.", ""), "golden_dtype": str(ref.dtype).replace("torch.", ""),
    }
    m["shape_match"] = m["output_shape"] == m["golden_shape"]
    m["dtype_match"] = m["output_dtype"] == m["golden_dtype"]
    o, g = _values(out), _values(ref)
    m["numel"] = int(o.numel())
    m["nan_count"], m["inf_count"], m["output_abs_max"], o_finite = _scan(o)
    g_finite: torch.Tensor | None
    _, _, m["golden_abs_max"], g_finite = _scan(g)
    # The golden's finite range: a constant golden makes a weak compare (runtime.judge.degenerate).
    m["golden_min"], m["golden_max"] = _range(g if g_finite is None else g[g_finite])
    m["bit_identical"] = bool(m["shape_match"] and m["dtype_match"] and torch.equal(out, ref))
    if not m["shape_match"]:
        m.update(max_abs_diff=None, max_rel_diff=None, mean_abs_diff=None,
                 mismatch_count=m["numel"], mismatch_ratio=1.0)
        return m
    if m["bit_identical"]:
        # torch.equal is False with a NaN, so every diff is 0 and only infinities leave the finite pairs.
        pairs = m["numel"] - m["inf_count"]
        zero = 0.0 if pairs else None
        m.update(finite_pairs=pairs, max_abs_diff=zero, mean_abs_diff=zero, max_rel_diff=zero,
                 mismatch_count=0, mismatch_ratio=0.0)
        if where is not None:
            where.skip(m["numel"])
        return m
    if m["nan_count"] == m["numel"]:
        # All NaN (scrubbed memory the kernel never wrote): no finite pair, and NaN is never close.
        m.update(finite_pairs=0, max_abs_diff=None, mean_abs_diff=None, max_rel_diff=None,
                 mismatch_count=m["numel"], mismatch_ratio=1.0 if m["numel"] else 0.0)
        if where is not None:
            where.add(torch.ones(m["numel"], dtype=torch.bool))
        return m
    o64, g64 = o.to(torch.float64), g.to(torch.float64)
    diff = (o64 - g64).abs_()
    g_abs = g64.abs()
    if o_finite is None and g_finite is None:
        d, scale = diff.reshape(-1), g_abs.reshape(-1)
    else:
        both = o_finite if g_finite is None else g_finite if o_finite is None else o_finite & g_finite
        d, scale = diff[both], g_abs[both]
    rel = d / scale.clamp_min(REL_FLOOR)
    m["finite_pairs"] = int(d.numel())  # elements where both sides are finite: the mean's weight
    m["max_abs_diff"] = float(d.max()) if d.numel() else None
    m["mean_abs_diff"] = float(d.mean()) if d.numel() else None
    m["max_rel_diff"] = float(rel.max()) if rel.numel() else None
    del d, scale, rel
    close = diff <= g_abs.mul_(rtol).add_(atol)
    if not (o_finite is None and g_finite is None and rtol >= 0 and atol >= 0):
        close |= (o64 == g64)  # equal infinities are close, as in allclose (and equal values under a bound < 0)
    mismatches = m["numel"] - int(close.sum())
    if where is not None and mismatches:
        where.add(close.logical_not_())
    elif where is not None:
        where.skip(m["numel"])
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
        "golden_min": _least(per_output, "golden_min"), "golden_max": worst("golden_max"),
        "bit_identical": all(p["bit_identical"] for p in per_output),
        "outputs": per_output,
    }



def _least(parts: list[dict[str, Any]], key: str) -> float | None:
    values = [p[key] for p in parts if p.get(key) is not None]
    return min(values) if values else None
