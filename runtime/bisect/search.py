"""The search of a bisect: the first revision whose verdict class turns from acceptable to kernel
defect, skipping revisions that say nothing about the kernel (docs/bisect.md §1).

Pure: it walks a list of revisions with a `probe(sha) -> Step` given by the caller, so the order
of probes and the skips can be tested and read without git or pypto.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ACCEPTABLE, DEFECT, SKIP = "acceptable", "kernel defect", "skip"


@dataclass
class Step:
    """One revision looked at: its class, how it was got and what it showed."""
    sha: str
    verdict_class: str  # ACCEPTABLE | DEFECT | SKIP
    how: str  # "run" | "reused" | "skipped"
    summary: str  # one line, e.g. "kernel defect: 1 of 2 case(s) (graph fail ×1)"
    reason: str = ""  # why skipped
    exit_code: int = 0  # the run's exit code (runtime/exit_codes.py), for a skip: 2 or 3
    content_sha256: str | None = None
    reused_from: str | None = None  # the revision whose run this reuses
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)  # case -> {verdict, max_abs_diff, ...}
    files: list[str] = field(default_factory=list)  # the operator's files at this revision
    job: str = ""  # when the service ran it: "job 12 http://host/jobs/12"


@dataclass
class Outcome:
    last_good: Step
    first_bad: Step | None  # None: only skipped revisions were left between the two
    undecided: list[str]  # when first_bad is None: the revisions any of which may be the first bad one
    steps: list[Step]


def bisect(revisions: list[str], good: Step, bad: Step, probe: Callable[[str], Step],
           on_step: Callable[[Step, int], None] | None = None) -> Outcome:
    """`revisions` oldest first, from the good revision to the bad one (both already probed)."""
    lo, hi = 0, len(revisions) - 1
    known: dict[int, Step] = {lo: good, hi: bad}
    skipped: set[int] = set()
    steps: list[Step] = []
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in skipped]
        if not open_:
            break
        middle = (lo + hi) / 2
        i = min(open_, key=lambda j: (abs(j - middle), j))
        step = probe(revisions[i])
        steps.append(step)
        if on_step is not None:
            on_step(step, len([j for j in range(lo + 1, hi) if j not in skipped]) - 1)
        known[i] = step
        if step.verdict_class == ACCEPTABLE:
            lo = i
        elif step.verdict_class == DEFECT:
            hi = i
        else:
            skipped.add(i)
    if hi == lo + 1:
        return Outcome(known[lo], known[hi], [], steps)
    return Outcome(known[lo], None, revisions[lo + 1:hi + 1], steps)


def changed_cases(before: Step, after: Step) -> list[dict[str, Any]]:
    """The cases whose verdict differs between two revisions (a case present in only one included)."""
    rows = []
    for case in sorted(set(before.cases) | set(after.cases)):
        b, a = before.cases.get(case, {}), after.cases.get(case, {})
        if b.get("verdict") != a.get("verdict"):
            rows.append({"case": case, "before": b, "after": a})
    return rows
