"""Culprits: the commit a bisect named for an operator that regressed in a suite run (docs/ci.md)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

METRICS = ("verdict", "aicore_us")  # what turned the operator bad: its verdict, or its SIM cost estimate


class SuiteRunCulprit(Base):
    """One per (suite run, operator): a later bisect of the same operator replaces it."""
    __tablename__ = "suite_run_culprits"
    __table_args__ = (UniqueConstraint("suite_run_id", "operator"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    suite_run_id: Mapped[int] = mapped_column(ForeignKey("suite_runs.id", ondelete="CASCADE"), index=True)
    operator: Mapped[str] = mapped_column(String(200))
    commit: Mapped[str] = mapped_column(String(64))  # the full sha
    subject: Mapped[str] = mapped_column(String(300), default="")
    metric: Mapped[str] = mapped_column(String(16), default="verdict")
    created_by: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
