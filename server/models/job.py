"""One run of a submission in one mode, with its status lifecycle."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

QUEUED, RUNNING = "queued", "running"
AWAITING_NPU = "awaiting_npu"  # an NPU job while no NPU worker is online (server/services/npu_wait.py)
SUCCEEDED, FAILED, ERROR, CANCELLED, TIMEOUT = "succeeded", "failed", "error", "cancelled", "timeout"
EXPIRED = "expired"  # waited as awaiting_npu longer than NPU_WAIT_S
STATUSES = (QUEUED, AWAITING_NPU, RUNNING, SUCCEEDED, FAILED, ERROR, CANCELLED, TIMEOUT, EXPIRED)
FINISHED = (SUCCEEDED, FAILED, ERROR, CANCELLED, TIMEOUT, EXPIRED)
WAITING = (QUEUED, AWAITING_NPU)  # claimable
INTERACTIVE = 1  # a job's priority when someone waits for it (submit --wait, the dashboard's Submit); else 0


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_queue_status_created", "queue", "status", "created_at"),
        # An operator's runs by date (docs/history.md §1): history pages walk it newest first, and the
        # mode in it makes that walk index-only (§7).
        Index("ix_jobs_operator_created_id_mode", "operator_id", "created_at", "id", "mode"),
        # An operator's latest jobs by id (the operator page's recent jobs): PostgreSQL otherwise sorts all of them.
        Index("ix_jobs_operator_id_id", "operator_id", "id"),
        # The relay's picks and slot counts (server/services/dispatch.py): waiting and running jobs by queue.
        Index("ix_jobs_status_queue", "status", "queue"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(8))
    queue: Mapped[str] = mapped_column(String(64))  # the mode, or "<mode>@<pypto version>" (jobqueue.queue_name)
    status: Mapped[str] = mapped_column(String(16), default=QUEUED, index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    worker: Mapped[str | None] = mapped_column(String(200))
    claim_token_id: Mapped[int | None] = mapped_column(Integer)  # the worker token that claimed this attempt
    env_fingerprint: Mapped[dict[str, Any]] = mapped_column(default=dict)
    progress: Mapped[dict[str, Any]] = mapped_column(default=dict)
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    timeout_s: Mapped[float] = mapped_column(Float)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    submitted_by: Mapped[str] = mapped_column(String(100), default="")
    report_path: Mapped[str | None] = mapped_column(String(500))
    case_count: Mapped[int] = mapped_column(Integer, default=0)
    duration_s: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    queued_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]
    awaiting_since: Mapped[datetime | None]  # set while awaiting_npu
    # The outbox (docs/platform.md §3): the attempt whose message the broker accepted. A waiting job whose
    # current attempt is not this one is relayed to the broker (server/relay.py).
    dispatched_attempt: Mapped[int | None] = mapped_column(Integer)
    dispatched_at: Mapped[datetime | None]
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # INTERACTIVE goes first
