"""Many runs of one operator, inserted in bulk with chosen dates, verdicts and diffs (history and
retention tests): what the services would store, without running a kernel per night."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from server.models import CaseResult, Job, Operator, Submission
from server.services import history_spans


@dataclass
class Run:
    at: datetime
    mode: str = "sim"
    cases: dict[str, tuple[str, float | None]] | None = None  # case -> (verdict, max_abs_diff)
    commit: str | None = None
    aicore_time_us: float | None = 3.0


def add_operator(session: Session, name: str) -> int:
    op = Operator(name=name, combined_verdict="pass", case_count=2, verdict_counts={})
    session.add(op)
    session.flush()
    return op.id


def add_runs(session: Session, operator_id: int, runs: list[Run]) -> list[int]:
    """One submission and job per run, its case results dated `at`; returns the job ids in order."""
    name = session.scalar(select(Operator.name).where(Operator.id == operator_id))
    ids = []
    for run in runs:
        sub = session.scalar(insert(Submission).returning(Submission.id), [dict(
            operator=name, kind="package", filename="k.zip", bundle_sha256="0" * 64, blob_path="none",
            modes=[run.mode], created_at=run.at)])
        job = session.scalar(insert(Job).returning(Job.id), [dict(
            submission_id=sub, operator_id=operator_id, mode=run.mode, queue=run.mode, status="succeeded",
            timeout_s=60.0, created_at=run.at, queued_at=run.at)])
        cases = {"c0": ("pass", 1e-4), "c1": ("pass", 2e-4)} if run.cases is None else run.cases
        if cases:  # {}: a job that stored nothing (queued, or failed before its first case)
            session.execute(insert(CaseResult), [_result(operator_id, name or "", job, run, case, verdict, diff)
                                                  for case, (verdict, diff) in cases.items()])
        ids.append(job)
    # As results.store and ingest do: the spans the year view reads (docs/history.md §6).
    history_spans.record(session, [SimpleNamespace(operator_id=operator_id, mode=r.mode, created_at=r.at) for r in runs])
    return ids


def _result(operator_id: int, name: str, job: int, run: Run, case: str, verdict: str,
            diff: float | None) -> dict[str, Any]:
    return dict(job_id=job, operator_id=operator_id, operator=name, case=case, mode=run.mode, verdict=verdict,
                structural="ok", precision="pass", max_abs_diff=diff, atol=1e-3, rtol=1e-3,
                graph_max_abs_diff=0.0 if run.mode == "sim" else None, aicore_time_us=run.aicore_time_us,
                utilization=0.5, commit=run.commit, branch="main", created_at=run.at, report={})
