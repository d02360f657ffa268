"""Operators: the overview row, the per-case view across modes, and history."""
from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel, Field

from server.schemas.common import OrmModel, UtcDatetime


class CaseCoverage(BaseModel):
    """How many of the operator's cases each mode has judged: `npu < cases` is partial NPU coverage,
    and the operator's verdict then claims nothing about the other cases on an NPU."""
    cases: int
    sim: int
    graph: int  # cases whose graph verify passed or failed
    npu: int


class OperatorRead(OrmModel):
    id: int
    name: str
    combined_verdict: str | None
    outcome: str | None = None  # failed | broken | skipped | acceptable (runtime.vocabulary, docs/dashboard.md §1)
    case_count: int
    verdict_counts: dict[str, int]
    sim_verdict: str | None
    npu_verdict: str | None
    sim_max_abs_diff: float | None
    graph_status: str | None
    graph_max_abs_diff: float | None
    npu_max_abs_diff: float | None
    npu_tolerance: float | None
    aicore_time_us: float | None
    latest_sim_job_id: int | None
    latest_npu_job_id: int | None
    labels: dict[str, Any]
    updated_at: UtcDatetime
    coverage: CaseCoverage | None = None
    uploaded_cases: int = Field(default=0, description="latest results that were uploaded, not run by a worker")


class OperatorList(BaseModel):
    items: list[OperatorRead]
    total: int
    counts: dict[str, int]  # operators per combined verdict, over all operators


class CaseResultBrief(OrmModel):
    id: int
    job_id: int
    mode: str
    verdict: str
    structural: str
    stage: str
    precision: str
    output_written: bool | None
    kernel_launches: int
    max_abs_diff: float | None
    max_rel_diff: float | None
    mismatch_ratio: float | None
    rtol: float | None
    atol: float | None
    graph_status: str | None
    graph_max_abs_diff: float | None
    aicore_time_us: float | None
    utilization: float | None
    duration_s: float
    error_type: str | None
    error_message: str | None
    diagnosis_rules: str
    created_at: UtcDatetime
    # Provenance: a worker (and its card) or an upload (and its token); see docs/ci.md.
    source: str = "worker"
    source_name: str = ""
    device: str | None = None
    verified: bool = True


class OperatorCase(BaseModel):
    case: str
    combined_verdict: str
    reason: str
    sim: CaseResultBrief | None
    npu: CaseResultBrief | None


class OperatorDetail(BaseModel):
    operator: OperatorRead
    cases: list[OperatorCase]


class HistoryPoint(BaseModel):
    """One run (a job in one mode), or with `buckets` several runs in one time span (runs > 1).

    Each value is the worst (max) over the run's cases; a bucket's value is the max over its runs and
    `<value>_min` the min, so spikes survive downsampling. For a single run the two are equal."""
    job_id: int  # the (last) run's job
    first_job_id: int
    runs: int
    mode: str
    created_at: UtcDatetime  # the (first) run's date
    until: UtcDatetime  # the last run's date
    commit: str | None
    branch: str | None
    max_abs_diff: float | None  # SIM: raw (SIM writes no outputs on CPU hosts, so this is garbage)
    max_abs_diff_min: float | None
    graph_max_abs_diff: float | None
    graph_max_abs_diff_min: float | None
    atol: float | None
    rtol: float | None
    aicore_time_us: float | None
    aicore_time_us_min: float | None
    utilization: float | None
    utilization_min: float | None
    cases: int


class HistoryDay(OrmModel):
    """A day's aggregate of one mode's results, kept by `crosscheck db compact` (docs/history.md)."""
    day: date
    mode: str
    runs: int
    results: int
    verdict_counts: dict[str, int]
    max_abs_diff_min: float | None
    max_abs_diff_max: float | None
    graph_max_abs_diff_max: float | None
    aicore_time_us_min: float | None
    aicore_time_us_max: float | None


class OperatorHistory(BaseModel):
    operator: str
    points: list[HistoryPoint]
    next_cursor: int | None = None  # older runs: pass it back as `cursor`
    days: list[HistoryDay] = []
