"""A bisect on the SIM cost model's estimate (`--metric aicore_us --threshold 10%`): a revision is bad
when any case's AICore estimate rose by the threshold against the good revision's (docs/bisect.md §5).

The estimate is the same for the same kernel, shapes and pypto (docs/bisect.md §4), so one run of each
revision is enough. It classifies the steps the verdict bisect's prober returns; search.bisect is the same.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from runtime.bisect import search

METRICS = ("verdict", "aicore_us")
SLOWER = "slower"  # how a bad revision reads in this bisect (search.DEFECT underneath)


def threshold(text: str) -> float:
    """'10%' or '10' -> 0.10; an argparse type."""
    import argparse

    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 10%, got {text!r}") from None
    if not 0 < value <= 1000 or value != value:
        raise argparse.ArgumentTypeError(f"the threshold must be above 0% and at most 1000%, got {text!r}")
    return value / 100


def estimates(step: search.Step) -> dict[str, float]:
    return {case: float(c["aicore_us"]) for case, c in step.cases.items()
            if isinstance(c.get("aicore_us"), (int, float))}


@dataclass
class Slower:
    """Classifies a step by its estimates against the good revision's."""
    baseline: dict[str, float]
    rise: float  # 0.10 for 10%

    def classify(self, step: search.Step) -> search.Step:
        if step.verdict_class == search.SKIP:
            return step  # absent, unusable or infrastructure: nothing measured
        now = estimates(step)
        missing = sorted(set(self.baseline) - set(now))
        if missing:
            why = f"no cost-model estimate for {', '.join(missing)}"
            return replace(step, verdict_class=search.SKIP, summary=why, reason=why)
        rows = rises(self.baseline, now)
        worst = max(rows, key=lambda r: r["rise"])
        over = [r for r in rows if r["rise"] >= self.rise * (1 - 1e-9)]
        if over:
            return replace(step, verdict_class=search.DEFECT,
                           summary=f"{SLOWER}: {_describe(over)}")
        return replace(step, verdict_class=search.ACCEPTABLE,
                       summary=f"within {self.rise:.0%}: worst {worst['case']} {worst['rise']:+.0%}")


def rises(baseline: dict[str, float], now: dict[str, float]) -> list[dict[str, Any]]:
    """Each baseline case's estimate before and now, and the relative rise."""
    return [{"case": case, "before_us": baseline[case], "after_us": now[case],
             "rise": now[case] / baseline[case] - 1 if baseline[case] > 0 else 0.0}
            for case in sorted(baseline) if case in now]


def changed_cases(before: search.Step, after: search.Step, rise: float) -> list[dict[str, Any]]:
    """The cases whose estimate rose by the threshold between two revisions."""
    return [r for r in rises(estimates(before), estimates(after)) if r["rise"] >= rise * (1 - 1e-9)]


def _describe(rows: list[dict[str, Any]]) -> str:
    first = max(rows, key=lambda r: r["rise"])
    more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
    return f"{first['case']} {first['before_us']:.4g} -> {first['after_us']:.4g} us ({first['rise']:+.0%}){more}"
