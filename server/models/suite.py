"""A suite: what a CI pipeline runs every night, with its flaky window and regression webhook."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

DEFAULT_FLAKY_WINDOW = 10  # runs looked at when counting a case's verdict flips
DEFAULT_DRIFT_GROWTH = 10.0  # an error this many times its median drifts (docs/ci.md, "Precision drift")
DEFAULT_DRIFT_WINDOW = 10  # earlier runs whose median it is held against
DEFAULT_PERF_THRESHOLD = 10.0  # % rise of the SIM cost estimate that is a performance regression (docs/ci.md)
DEFAULT_FLAKY_MIN_FLIPS = 2  # flips in the window that make a case flaky


class Suite(Base):
    __tablename__ = "suites"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    flaky_window: Mapped[int] = mapped_column(Integer, default=DEFAULT_FLAKY_WINDOW)
    flaky_min_flips: Mapped[int] = mapped_column(Integer, default=DEFAULT_FLAKY_MIN_FLIPS)
    # Precision drift (server/services/drift.py): growth against the median, over this many earlier runs.
    drift_growth: Mapped[float] = mapped_column(Float, default=DEFAULT_DRIFT_GROWTH)
    drift_window: Mapped[int] = mapped_column(Integer, default=DEFAULT_DRIFT_WINDOW)
    # Performance regressions (server/services/perf.py): this many percent over the previous run's estimate.
    perf_threshold: Mapped[float] = mapped_column(Float, default=DEFAULT_PERF_THRESHOLD)
    webhook_url: Mapped[str | None] = mapped_column(String(500))
    webhook_secret: Mapped[str | None] = mapped_column(String(200))  # signs payloads (HMAC-SHA256)
    created_by: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
