"""An operator's history by commit and date (not by job id): what each commit did, per mode."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from runtime import verdicts
from server.models import CaseResult
from server.services.history import Run, newest_runs

# The newest runs looked at, the same runs the page draws (docs/history.md §1): older commits drop off
# the table, and the page reads as much for an operator with 100 runs as for one with 1,000.
MAX_RUNS = 100


@dataclass
class CommitPoint:
    commit: str | None
    branch: str | None
    day: str  # YYYY-MM-DD (UTC) of the newest run
    last_at: datetime
    modes: dict[str, dict[str, int]] = field(default_factory=dict)  # mode -> verdict -> cases
    graph_max_abs_diff: float | None = None
    npu_max_abs_diff: float | None = None
    jobs: list[int] = field(default_factory=list)

    def failing(self) -> int:
        return sum(n for mode, counts in self.modes.items() for v, n in counts.items()
                   if not verdicts.acceptable(v, mode))


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def by_commit(session: Session, operator_id: int, limit: int = 30, runs: list[Run] | None = None) -> list[CommitPoint]:
    """Newest first; runs whose results carry no commit label are grouped by day. `runs`: the newest
    MAX_RUNS runs when the caller has them already (history.runs_of)."""
    if runs is None:
        runs = newest_runs(session, operator_id, MAX_RUNS)
    if not runs:
        return []
    r = CaseResult
    per_job: dict[int, list[Any]] = {}
    # Served by ix_case_results_job_values alone (no table reads).
    for row in session.execute(select(r.job_id, r.verdict, func.count(), func.max(r.max_abs_diff),
                                      func.max(r.graph_max_abs_diff), func.max(r.commit), func.max(r.branch))
                               .where(r.job_id.in_([run.id for run in runs])).group_by(r.job_id, r.verdict)):
        per_job.setdefault(row[0], []).append(row)
    points: dict[tuple[Any, ...], CommitPoint] = {}
    for run in runs:  # newest first
        for _, verdict, n, diff, gdiff, commit, branch in per_job.get(run.id, []):
            day = run.created_at.strftime("%Y-%m-%d")
            key = ("commit", commit, branch) if commit else ("day", day, branch)
            p = points.get(key)
            if p is None:
                if len(points) >= limit:
                    continue
                p = points[key] = CommitPoint(commit=commit, branch=branch, day=day, last_at=run.created_at)
            counts = p.modes.setdefault(run.mode, {})
            counts[verdict] = counts.get(verdict, 0) + n
            if run.mode == "npu":
                p.npu_max_abs_diff = _max(p.npu_max_abs_diff, diff)
            else:
                p.graph_max_abs_diff = _max(p.graph_max_abs_diff, gdiff)
            if run.id not in p.jobs:
                p.jobs.append(run.id)
    return list(points.values())
