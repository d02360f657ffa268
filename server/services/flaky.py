"""Flaky cases: how often a case's verdict flipped over a suite's last N runs.

A flip is a verdict change between two consecutive runs in which the operator's content was the
same (or unknown, e.g. a JUnit upload without a hash): a change that follows a change to the
kernel is the kernel's doing, not flakiness. Pending and missing results neither flip nor break
the chain (the comparison skips to the next run that has the case).
"""
from __future__ import annotations

from collections.abc import Sequence

Key = tuple[str, str, str]  # operator, case, mode
Observation = tuple[str, str | None]  # verdict, content sha256


def flip_counts(history: Sequence[dict[Key, Observation]]) -> dict[Key, int]:
    """Flips per case over runs given oldest first."""
    last: dict[Key, Observation] = {}
    flips: dict[Key, int] = {}
    for run in history:
        for key, (verdict, content) in run.items():
            prev = last.get(key)
            flips.setdefault(key, 0)
            if prev is not None and prev[0] != verdict and (prev[1] is None or content is None or prev[1] == content):
                flips[key] += 1
            last[key] = (verdict, content)
    return flips


def is_flaky(flips: int, min_flips: int) -> bool:
    return flips >= max(1, min_flips)
