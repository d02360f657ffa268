"""Whether a failed compare on the graph's values is within the rounding of a low-precision output.

pypto 0.2.0's graph-verify calculator rounds the result of every op of the tensor graph to the tensor's
dtype; on bf16 kernels that is one rounding path among several, and pypto's own lowered passes of the
same kernel differ from its tensor graph by about one unit in the last place at the output's scale
(docs/realops.md §9, `python docs/repro/bf16_rounding.py`). A compare tighter than that, failing by no
more than that, says nothing about the kernel's maths: it is not a `graph_fail`.
"""
from __future__ import annotations

import math
from typing import Any

# 8 significant bits for bf16, 11 for fp16 (the implicit bit counted): one ulp at 1.0 is 2**-7 / 2**-10.
LOW_PRECISION_EPS = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}
ROUNDING_ULPS = 2  # pypto's own lowerings were 1 ulp apart on ffn_module.py (docs/realops.md §9)


def ulp(magnitude: float, dtype: str) -> float:
    """The spacing of `dtype` values at `magnitude` (its unit in the last place)."""
    eps = LOW_PRECISION_EPS[dtype]
    if magnitude <= 0 or not math.isfinite(magnitude):
        return eps
    return 2.0 ** math.floor(math.log2(magnitude)) * eps


def within_rounding(asserts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The failed graph-judged asserts, if every one is on a bf16/fp16 output and off by at most ROUNDING_ULPS.

    None when any failed assert is on a wider dtype, lacks metrics (NaN, shape), or is off by more.
    """
    failed = [a for a in asserts if isinstance(a.get("graph"), dict) and a["graph"].get("on_graph_result")
              and not _passed(a.get("metrics") or {})]
    if not failed:
        return None
    found = []
    for a in failed:
        m, dtype = a.get("metrics") or {}, str(a["graph"].get("dtype") or "")
        diff, scale = m.get("max_abs_diff"), m.get("golden_abs_max")
        if dtype not in LOW_PRECISION_EPS or diff is None or scale is None or m.get("nan_count") or m.get("inf_count"):
            return None
        bound = ROUNDING_ULPS * ulp(float(scale), dtype)
        if float(diff) > bound:
            return None
        found.append({"kernel": a["graph"].get("kernel"), "dtype": dtype, "max_abs_diff": diff,
                      "golden_abs_max": scale, "ulp": ulp(float(scale), dtype), "rtol": m.get("rtol"),
                      "atol": m.get("atol"), "mismatch_ratio": m.get("mismatch_ratio")})
    return {"asserts": found}


def _passed(m: dict[str, Any]) -> bool:
    """An assert's own allclose verdict, as runtime/judge/tolerance.py reads it."""
    if m.get("kind") == "scalar_compare":  # a bare compare: its own result
        return m.get("held") is True
    return bool("error" not in m and m.get("shape_match") and m.get("mismatch_count") == 0 and not m.get("nan_count"))
