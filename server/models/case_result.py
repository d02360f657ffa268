"""One row per case per job: the runtime's case report, with the filtered fields as columns."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class CaseResult(Base):
    __tablename__ = "case_results"
    __table_args__ = (
        # Keyset pagination orders by id; each filter has an index ending in id.
        Index("ix_case_results_operator_mode_id", "operator_id", "mode", "id"),
        Index("ix_case_results_verdict_id", "verdict", "id"),
        Index("ix_case_results_mode_id", "mode", "id"),
        Index("ix_case_results_created_at", "created_at"),
        Index("ix_case_results_reuse_key_id", "reuse_key", "id"),
        # A job's results with what its history point and commit row need: index-only reads of a run
        # at 10M rows (docs/history.md §1); the leading job_id also serves the jobs foreign key.
        Index("ix_case_results_job_values", "job_id", "mode", "verdict", "max_abs_diff", "graph_max_abs_diff", "atol",
              "rtol", "aicore_time_us", "utilization", "commit", "branch"),
        # One operator's results in id order: commit history and `crosscheck db compact`.
        Index("ix_case_results_operator_id_id", "operator_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"))
    operator: Mapped[str] = mapped_column(String(200))
    case: Mapped[str] = mapped_column(String(200))
    mode: Mapped[str] = mapped_column(String(8))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    verdict: Mapped[str] = mapped_column(String(32))
    structural: Mapped[str] = mapped_column(String(16))
    stage: Mapped[str] = mapped_column(String(32), default="")
    precision: Mapped[str] = mapped_column(String(16))
    output_written: Mapped[bool | None] = mapped_column(Boolean)
    kernel_launches: Mapped[int] = mapped_column(Integer, default=0)
    max_abs_diff: Mapped[float | None] = mapped_column(Float)
    max_rel_diff: Mapped[float | None] = mapped_column(Float)
    mismatch_ratio: Mapped[float | None] = mapped_column(Float)
    nan_count: Mapped[int | None] = mapped_column(Integer)
    inf_count: Mapped[int | None] = mapped_column(Integer)
    output_abs_max: Mapped[float | None] = mapped_column(Float)
    golden_abs_max: Mapped[float | None] = mapped_column(Float)
    rtol: Mapped[float | None] = mapped_column(Float)
    atol: Mapped[float | None] = mapped_column(Float)
    shape_match: Mapped[bool | None] = mapped_column(Boolean)
    dtype_match: Mapped[bool | None] = mapped_column(Boolean)
    aicore_time_us: Mapped[float | None] = mapped_column(Float)
    utilization: Mapped[float | None] = mapped_column(Float)
    total_cycles: Mapped[int | None] = mapped_column(Integer)
    aic_tasks: Mapped[int | None] = mapped_column(Integer)
    aiv_tasks: Mapped[int | None] = mapped_column(Integer)
    graph_status: Mapped[str | None] = mapped_column(String(16))
    graph_max_abs_diff: Mapped[float | None] = mapped_column(Float)
    duration_s: Mapped[float] = mapped_column(Float, default=0.0)
    error_type: Mapped[str | None] = mapped_column(String(200))
    error_message: Mapped[str | None] = mapped_column(Text)
    diagnosis_rules: Mapped[str] = mapped_column(String(500), default="")  # space separated rule ids
    branch: Mapped[str | None] = mapped_column(String(200), index=True)
    commit: Mapped[str | None] = mapped_column(String(100))
    author: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    report: Mapped[dict[str, Any]] = mapped_column(default=dict)  # the runtime's full case dict
    # Provenance (server/services/provenance.py): a worker and its card, or an upload and its token.
    source: Mapped[str] = mapped_column(String(16), default="worker")
    source_name: Mapped[str] = mapped_column(String(200), default="")
    token_id: Mapped[int | None] = mapped_column(Integer)  # the token that posted it (a worker's or an upload's)
    device: Mapped[str | None] = mapped_column(String(64))
    verified: Mapped[bool] = mapped_column(Boolean, default=True)
    content_sha256: Mapped[str | None] = mapped_column(String(64))
    reuse_key: Mapped[str | None] = mapped_column(String(64))  # server/services/reuse.py
