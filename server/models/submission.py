"""A submitted bundle (stored once per sha256) and its labels."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("token_id", "idempotency_key", name="uq_submissions_token_id_idempotency_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    operator: Mapped[str] = mapped_column(String(200), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # package | script
    filename: Mapped[str] = mapped_column(String(300))
    bundle_sha256: Mapped[str] = mapped_column(String(64), index=True)
    blob_path: Mapped[str] = mapped_column(String(500))
    modes: Mapped[list[Any]] = mapped_column(default=list)
    case_filter: Mapped[list[Any]] = mapped_column(default=list)
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    branch: Mapped[str | None] = mapped_column(String(200), index=True)
    commit: Mapped[str | None] = mapped_column(String(100))
    author: Mapped[str | None] = mapped_column(String(200), index=True)
    suite_run_id: Mapped[int | None] = mapped_column(ForeignKey("suite_runs.id", ondelete="SET NULL"))
    # An Idempotency-Key is the caller's: unique per token, and a replay must repeat the request.
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    token_id: Mapped[int | None] = mapped_column(Integer)
    request_sha256: Mapped[str | None] = mapped_column(String(64))  # bundle, modes, operator, cases, labels
    created_by: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
