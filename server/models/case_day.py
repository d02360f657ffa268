"""Daily aggregates of an operator's results per mode: what `crosscheck db compact` keeps of the
results it deletes (docs/history.md)."""
from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Date, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base


class CaseDay(Base):
    __tablename__ = "case_days"

    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"), primary_key=True)
    mode: Mapped[str] = mapped_column(String(8), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)  # UTC day of the results' created_at
    runs: Mapped[int] = mapped_column(Integer, default=0)  # distinct jobs
    results: Mapped[int] = mapped_column(Integer, default=0)
    verdict_counts: Mapped[dict[str, Any]] = mapped_column(default=dict)  # verdict -> results
    max_abs_diff_min: Mapped[float | None] = mapped_column(Float)
    max_abs_diff_max: Mapped[float | None] = mapped_column(Float)
    graph_max_abs_diff_max: Mapped[float | None] = mapped_column(Float)
    aicore_time_us_min: Mapped[float | None] = mapped_column(Float)
    aicore_time_us_max: Mapped[float | None] = mapped_column(Float)
    # The newest result counted: a later compaction adds only results above it.
    last_result_id: Mapped[int] = mapped_column(Integer, default=0)
