"""Suite runs: one CI run of a suite (its labels, start, end and totals), and the results it holds."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

OPEN, FINISHED = "open", "finished"  # open: submissions may still arrive or jobs still run
PENDING, DONE = "pending", "done"
# Where a suite-run result came from.
FROM_WORKER, REUSED, UPLOADED = "worker", "reused", "upload"


class SuiteRun(Base):
    __tablename__ = "suite_runs"
    __table_args__ = (UniqueConstraint("suite_id", "run_key"),
                      Index("ix_suite_runs_suite_branch_id", "suite_id", "branch", "id"))

    id: Mapped[int] = mapped_column(primary_key=True)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))  # the suite's name
    run_key: Mapped[str] = mapped_column(String(200))  # the caller's id for this run (e.g. a pipeline id)
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    branch: Mapped[str | None] = mapped_column(String(200))
    commit: Mapped[str | None] = mapped_column(String(100), index=True)
    pipeline_url: Mapped[str | None] = mapped_column(String(500))
    modes: Mapped[list[Any]] = mapped_column(default=list)
    reuse: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(16), default=OPEN, index=True)
    created_by: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    closed_at: Mapped[datetime | None]  # the client said every operator is submitted
    finished_at: Mapped[datetime | None]
    duration_s: Mapped[float | None] = mapped_column(Float)
    previous_run_id: Mapped[int | None] = mapped_column(Integer)  # what `compare` was against
    totals: Mapped[dict[str, Any]] = mapped_column(default=dict)
    compare: Mapped[dict[str, Any]] = mapped_column(default=dict)  # counts against previous_run_id


class SuiteRunResult(Base):
    """One operator x case x mode (x attempt) of a suite run: pending, run by a worker, reused or uploaded."""
    __tablename__ = "suite_run_results"
    __table_args__ = (UniqueConstraint("suite_run_id", "operator", "case", "mode", "attempt"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    suite_run_id: Mapped[int] = mapped_column(ForeignKey("suite_runs.id", ondelete="CASCADE"))
    operator: Mapped[str] = mapped_column(String(200))
    case: Mapped[str] = mapped_column(String(200))
    mode: Mapped[str] = mapped_column(String(8))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    verdict: Mapped[str | None] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16), default=FROM_WORKER)
    case_result_id: Mapped[int | None] = mapped_column(ForeignKey("case_results.id", ondelete="SET NULL"),
                                                       index=True)
    job_id: Mapped[int | None] = mapped_column(Integer, index=True)  # the job that ran (or will run) it
    reused_from_job_id: Mapped[int | None] = mapped_column(Integer)
    content_sha256: Mapped[str | None] = mapped_column(String(64))
    max_abs_diff: Mapped[float | None] = mapped_column(Float)
    graph_max_abs_diff: Mapped[float | None] = mapped_column(Float)
    diagnosis_rules: Mapped[str] = mapped_column(String(500), default="")
    verified: Mapped[bool] = mapped_column(Boolean, default=True)
    flips: Mapped[int] = mapped_column(Integer, default=0)  # verdict changes over the suite's flaky window
    note: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
