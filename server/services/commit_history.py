"""An operator's history by commit and date (not by job id): what each commit did, per mode."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runtime import verdicts
from server.models import CaseResult

MAX_RESULTS = 5000  # the newest results looked at; older commits drop off the table


@dataclass
class CommitPoint:
    commit: str | None
    branch: str | None
    day: str  # YYYY-MM-DD (UTC) of the newest result
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


def by_commit(session: Session, operator_id: int, limit: int = 30) -> list[CommitPoint]:
    """Newest first; results without a commit label are grouped by day."""
    rows = session.execute(select(CaseResult.commit, CaseResult.branch, CaseResult.mode, CaseResult.verdict,
                                  CaseResult.created_at, CaseResult.max_abs_diff, CaseResult.graph_max_abs_diff,
                                  CaseResult.job_id)
                           .where(CaseResult.operator_id == operator_id)
                           .order_by(CaseResult.id.desc()).limit(MAX_RESULTS))
    points: dict[tuple[Any, ...], CommitPoint] = {}
    for commit, branch, mode, verdict, created, diff, gdiff, job_id in rows:
        day = created.strftime("%Y-%m-%d")
        key = ("commit", commit, branch) if commit else ("day", day, branch)
        p = points.get(key)
        if p is None:
            if len(points) >= limit:
                continue
            p = points[key] = CommitPoint(commit=commit, branch=branch, day=day, last_at=created)
        counts = p.modes.setdefault(mode, {})
        counts[verdict] = counts.get(verdict, 0) + 1
        if mode == "npu":
            p.npu_max_abs_diff = _max(p.npu_max_abs_diff, diff)
        else:
            p.graph_max_abs_diff = _max(p.graph_max_abs_diff, gdiff)
        if job_id not in p.jobs:
            p.jobs.append(job_id)
    return list(points.values())
