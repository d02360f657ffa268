"""Kernel timing on the NPU: warmup, repeats, synchronize around each call; median and spread.

One number hides noise: the report keeps the median, the quartiles, the extremes and the sample
count. Timings belong to one card of one host: never compare them across cards (docs/npu.md §4).
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.errors import SubmissionError

DEFAULT_WARMUP = 3
DEFAULT_REPEATS = 10
MAX_REPEATS = 1000


@dataclass(frozen=True)
class TimingSpec:
    warmup: int = DEFAULT_WARMUP
    repeats: int = DEFAULT_REPEATS


def parse_spec(label: str, raw: Any) -> TimingSpec | None:
    """A case's "timing": true, or {"warmup": N, "repeats": N}; None when absent or false."""
    if raw is None or raw is False:
        return None
    if raw is True:
        return TimingSpec()
    if not isinstance(raw, dict) or set(raw) - {"warmup", "repeats"}:
        raise SubmissionError(f"{label}: 'timing' must be true or {{\"warmup\": N, \"repeats\": N}}, got {raw!r}")
    values = {}
    for key, low in (("warmup", 0), ("repeats", 1)):
        value = raw.get(key, getattr(TimingSpec, key))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_REPEATS:
            raise SubmissionError(f"{label}: timing '{key}' must be a whole number from {low} to {MAX_REPEATS}, "
                                  f"got {value!r}")
        values[key] = value
    return TimingSpec(**values)


def measure(call: Callable[[], Any], synchronize: Callable[[], None], spec: TimingSpec,
            clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """Time `call` (a kernel launch) `spec.repeats` times after `spec.warmup` untimed calls.

    Each sample is bracketed by synchronize(): device work is asynchronous, so the clock stops
    only once the card is done.
    """
    for _ in range(spec.warmup):
        call()
        synchronize()
    samples = []
    for _ in range(spec.repeats):
        synchronize()
        start = clock()
        call()
        synchronize()
        samples.append(clock() - start)
    return {"warmup": spec.warmup, **summarize(samples)}


def summarize(samples_s: list[float]) -> dict[str, Any]:
    """Median, quartiles, extremes (microseconds) and the relative spread (IQR / median)."""
    if not samples_s:
        raise ValueError("no timing samples")
    us = sorted(s * 1e6 for s in samples_s)
    q1, q3 = (us[0], us[0]) if len(us) < 2 else _quartiles(us)
    median = statistics.median(us)
    return {
        "repeats": len(us), "median_us": round(median, 3), "q1_us": round(q1, 3), "q3_us": round(q3, 3),
        "min_us": round(us[0], 3), "max_us": round(us[-1], 3),
        "spread": round((q3 - q1) / median, 4) if median > 0 else None,
    }


def _quartiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]
