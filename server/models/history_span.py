"""An operator's runs summarised per span of UTC days, written with the results: what the year view
reads instead of the runs themselves (docs/history.md §6)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base

ALL_CASES = ""  # `case` of a span of whole runs (each run's worst over its cases)


class HistorySpan(Base):
    __tablename__ = "history_spans"
    # A date range's spans of one width, bounded by the range whatever the operator's age (docs/history.md §7).
    __table_args__ = (Index("ix_history_spans_operator_days_span", "operator_id", "days", "span"),)

    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"), primary_key=True)
    case: Mapped[str] = mapped_column(String(200), primary_key=True)  # ALL_CASES, or one case's own values
    mode: Mapped[str] = mapped_column(String(8), primary_key=True)
    days: Mapped[int] = mapped_column(Integer, primary_key=True)  # the span's width in UTC days
    span: Mapped[int] = mapped_column(Integer, primary_key=True)  # days since 1970-01-01 // days
    runs: Mapped[int] = mapped_column(Integer)
    cases: Mapped[int] = mapped_column(Integer)  # results summed over the runs
    first_job_id: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[int] = mapped_column(Integer)  # the last run
    created_at: Mapped[datetime]  # the first run's date
    until: Mapped[datetime]  # the last run's date
    # The last run's labels and tolerances.
    commit: Mapped[str | None] = mapped_column(String(100))
    branch: Mapped[str | None] = mapped_column(String(200))
    atol: Mapped[float | None] = mapped_column(Float)
    rtol: Mapped[float | None] = mapped_column(Float)
    # Per run values (history.VALUES): the max and the min over the span's runs.
    max_abs_diff: Mapped[float | None] = mapped_column(Float)
    max_abs_diff_min: Mapped[float | None] = mapped_column(Float)
    graph_max_abs_diff: Mapped[float | None] = mapped_column(Float)
    graph_max_abs_diff_min: Mapped[float | None] = mapped_column(Float)
    aicore_time_us: Mapped[float | None] = mapped_column(Float)
    aicore_time_us_min: Mapped[float | None] = mapped_column(Float)
    utilization: Mapped[float | None] = mapped_column(Float)
    utilization_min: Mapped[float | None] = mapped_column(Float)
    graph_failed: Mapped[bool] = mapped_column(default=False)  # a case's graph verify failed in one of the runs
