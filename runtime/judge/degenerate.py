"""Compares that cannot tell a correct kernel from garbage (docs/realops.md §11).

A match is evidence only when a wrong output would have missed. It would not when zeros pass the compare
(an all-zero golden, or one within atol of zero: a zero-filled output nobody wrote matches), or when the
golden is one value everywhere (softmax over one key is 1.0 for any input, and so is garbage after the
normalisation), or one element equal to ±1 (a single element after a normalisation). Such a case is
`inconclusive` (runtime.verdicts): neither a pass nor a cheat. Read from the harness's own metrics
(runtime.evidence.metrics: golden_abs_max, golden_min, golden_max), never from the job's claims.
"""
from __future__ import annotations

from typing import Any


def reason(m: dict[str, Any] | None) -> str:
    """Why this compare cannot tell a correct kernel from garbage, or "" when it can."""
    if not m or not m.get("shape_match") or not m.get("numel"):
        return ""
    top, low, high = m.get("golden_abs_max"), m.get("golden_min"), m.get("golden_max")
    if top is None or low is None or high is None or m.get("nan_count") is None:
        return ""
    atol = float(m.get("atol") or 0.0)
    if top <= atol:
        what = "all zero" if top == 0 else f"within atol={atol:g} of zero everywhere"
        return f"the golden is {what}, so a zero-filled output nobody wrote matches it"
    if low != high:
        return ""
    if int(m["numel"]) > 1:
        return (f"the golden is {low:g} in all {m['numel']} elements: any output filled or normalised to that "
                "constant matches it")
    if abs(low) == 1.0:
        return f"the golden is one element equal to {low:g}, as any normalisation of one element gives"
    return ""


def of_asserts(asserts: list[dict[str, Any]]) -> str:
    """A script's reason: every compare its asserts made on a tensor is degenerate (the first one's reason)."""
    compared = [a.get("metrics") for a in asserts if isinstance(a.get("metrics"), dict)
                and a["metrics"].get("golden_abs_max") is not None]
    reasons = [reason(m) for m in compared]
    return reasons[0] if reasons and all(reasons) else ""
