"""Whether metrics count as within tolerance (stdlib only: the leader side has no torch)."""
from __future__ import annotations

from typing import Any

SCALAR_COMPARE = "scalar_compare"  # `assert max_diff < tol` on a float read from a kernel output
RETURNED_COMPARE = "returned_compare"  # torch/numpy allclose on a kernel output: judged by what it returned


def within_tolerance(m: dict[str, Any], compare_kind: str = "strict", max_ratio: float = 0.005) -> bool:
    """Strict: every element close and no NaN. Ratio: no NaN/inf and at most max_ratio outside."""
    if not isinstance(m, dict) or not m.get("shape_match") or "error" in m:
        return False
    try:
        if compare_kind == "ratio":
            return bool(m["nan_count"] == 0 and m["inf_count"] == 0 and m["mismatch_ratio"] <= max_ratio)
        return bool(m["mismatch_count"] == 0 and m["nan_count"] == 0)
    except (KeyError, TypeError):  # metrics a job made up: not within anything
        return False


def assert_passed(m: dict[str, Any]) -> bool:
    """A captured assert_allclose/assert_close call, judged by its own rtol/atol; a bare compare or allclose by its result."""
    if isinstance(m, dict) and m.get("kind") == SCALAR_COMPARE:
        return m.get("held") is True
    if isinstance(m, dict) and m.get("kind") == RETURNED_COMPARE:
        return m.get("returned") is True
    return "error" not in m and within_tolerance(m)
