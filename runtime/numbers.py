"""How a measured number is written, the same in the CLI, the JUnit writer and every dashboard page.

A SIM output on a CPU host is leftover memory (docs/pypto.md §2): its "diff" is shown as an order of
magnitude tagged "SIM garbage", never as a plain number a reader could take for a measurement.
"""
from __future__ import annotations

import math
from typing import Any

# Past this, a SIM diff is noise whatever the verdict says.
GARBAGE_ABS_DIFF = 1e6
GARBAGE_TAG = "SIM garbage"
# Verdicts whose SIM output is known unwritten; and those where SIM never produced an output at all.
SIM_GARBAGE_VERDICTS = ("sim_output_unwritten", "sim_garbage_graph_ok")
SIM_BROKEN_VERDICTS = ("structural_error", "crash", "timeout", "resource_limit", "not_run")
# Units are written as here and never case-transformed: "µs" upper-cased reads "MS" (milliseconds).
AICORE_US = "AICore µs"


def sig(value: Any, digits: int = 3) -> str:
    """A number with `digits` significant digits: 0.000123 -> '1.23e-4', 1234.5 -> '1.23e+3' -> '1230'."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e6:
        return f"{int(x):,}"
    if 1e-3 <= abs(x) < 1e6:
        return f"{x:.{digits}g}"
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def magnitude(value: Any) -> str:
    """The order of magnitude, as '10^31'; '0' for an exact match."""
    if value is None:
        return "—"
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞"
    if x == 0:
        return "0"
    return f"10^{math.floor(math.log10(abs(x)))}"


def is_sim_garbage(diff: Any, nan: Any = 0, written: bool | None = None, verdict: str | None = None) -> bool:
    """Whether a SIM output's diff is leftover memory rather than a measurement. An exact match is
    evidence, never garbage (a fake pass matches because the kernel never ran)."""
    nan_n = int(nan or 0)
    if diff is None and not nan_n:
        return False
    if verdict == "suspect_fake_pass" or (diff == 0 and not nan_n):
        return False
    unwritten = written is False or verdict in SIM_GARBAGE_VERDICTS
    huge = diff is not None and (math.isnan(float(diff)) or math.isinf(float(diff)) or abs(float(diff)) >= GARBAGE_ABS_DIFF)
    return unwritten or huge


def count(n: Any, what: str) -> str:
    """'NaN ×2,192'; empty for none."""
    return f"{what} ×{sig(int(n))}" if n else ""


def nan_inf(nan: Any, inf: Any) -> str:
    """NaN and Inf counts the one way: 'NaN ×3 · Inf ×1', 'none' when both are zero, '—' when unknown."""
    if nan is None and inf is None:
        return "—"
    parts = [p for p in (count(nan, "NaN"), count(inf, "Inf")) if p]
    return " · ".join(parts) or "none"


def sim_diff_text(diff: Any, nan: Any = 0, garbage: bool = False) -> str:
    """A SIM max |diff|: '10^0 · SIM garbage (NaN ×2,192)' for leftover memory, else its value."""
    if garbage:
        text = f"{magnitude(diff) if diff is not None else 'NaN'} · {GARBAGE_TAG}"
        return text + (f" ({count(nan, 'NaN')})" if nan else "")
    text = sig(diff) if diff is not None else "—"
    return text + (f" ({count(nan, 'NaN')})" if nan else "")
