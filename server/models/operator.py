"""Operators and their latest state per case (denormalized for a fast overview)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, false
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class Operator(Base):
    __tablename__ = "operators"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    # Summary of the latest results, rewritten whenever a job of this operator finishes.
    combined_verdict: Mapped[str | None] = mapped_column(String(32), index=True)
    # The worst case's outcome across modes (runtime.vocabulary; server.services.combined.outcome).
    outcome: Mapped[str | None] = mapped_column(String(16), index=True)
    case_count: Mapped[int] = mapped_column(Integer, default=0)
    verdict_counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    sim_verdict: Mapped[str | None] = mapped_column(String(32))
    npu_verdict: Mapped[str | None] = mapped_column(String(32))
    sim_max_abs_diff: Mapped[float | None] = mapped_column(Float)
    graph_status: Mapped[str | None] = mapped_column(String(16))
    graph_max_abs_diff: Mapped[float | None] = mapped_column(Float)
    npu_max_abs_diff: Mapped[float | None] = mapped_column(Float)
    npu_tolerance: Mapped[float | None] = mapped_column(Float)
    aicore_time_us: Mapped[float | None] = mapped_column(Float)
    latest_sim_job_id: Mapped[int | None] = mapped_column(Integer)
    latest_npu_job_id: Mapped[int | None] = mapped_column(Integer)
    # What the overview row shows of its cases, counted here so that the page reads one row per
    # operator (docs/dashboard.md §6): cases each mode judged (§4), the SIM outputs' NaNs, and
    # whether no SIM case wrote its output.
    sim_cases: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    graph_cases: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    npu_cases: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    sim_nan_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    sim_unwritten: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The tenant (token name) that first submitted or uploaded it: only it, or an admin, may upload
    # results for it (server/services/ownership.py). None: made before owners were recorded; admins only.
    owner: Mapped[str | None] = mapped_column(String(100))
    # Latest results that came from an upload, not a worker: the overview marks the verdict as uploaded.
    uploaded_cases: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class CaseState(Base):
    """The latest SIM and NPU result of one case, and the verdict across modes."""
    __tablename__ = "case_states"

    operator_id: Mapped[int] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"), primary_key=True)
    case: Mapped[str] = mapped_column(String(200), primary_key=True)
    sim_result_id: Mapped[int | None] = mapped_column(Integer)
    npu_result_id: Mapped[int | None] = mapped_column(Integer)
    combined_verdict: Mapped[str] = mapped_column(String(32), index=True)
    reason: Mapped[str] = mapped_column(String(300), default="")
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
