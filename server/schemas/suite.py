"""Suites, suite runs, their results and comparisons, webhook deliveries."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from runtime.modes import Mode
from server.schemas.common import OrmModel, UtcDatetime
from server.schemas.submission import JobBrief


class SuiteRunCreate(BaseModel):
    """Open a suite run; the same suite and run key answer the run already open (a retried call)."""
    suite: str = Field(..., max_length=200, description="the suite's name, e.g. nightly-ops")
    run_key: str = Field(..., max_length=200, description="your id for this run, e.g. the pipeline id")
    labels: dict[str, str] = Field(default_factory=dict, description="commit, branch, pipeline (a URL), ...")
    modes: list[Mode] = Field(default_factory=lambda: list[Mode](["sim"]))
    reuse: bool = Field(default=True, description="link unchanged results instead of running them again")


class CulpritIn(BaseModel):
    """The commit a bisect named for one regressed operator of the run (docs/ci.md)."""
    operator: str = Field(..., min_length=1, max_length=200)
    commit: str = Field(..., min_length=7, max_length=64, description="the first bad commit's full sha")
    subject: str = Field(default="", max_length=300, description="its subject line")
    metric: Literal["verdict", "aicore_us"] = Field(
        default="verdict", description="what turned it bad: the verdict, or the SIM cost estimate")


class CulpritsCreate(BaseModel):
    items: list[CulpritIn] = Field(..., min_length=1, max_length=500)


class CulpritRead(OrmModel):
    operator: str
    commit: str
    subject: str
    metric: str
    created_by: str
    created_at: UtcDatetime


class CulpritList(BaseModel):
    items: list[CulpritRead]


class SuiteRunRead(OrmModel):
    id: int
    suite: str = Field(validation_alias="name")
    run_key: str
    labels: dict[str, Any]
    branch: str | None
    commit: str | None
    pipeline_url: str | None
    modes: list[str]
    reuse: bool
    status: str  # open | finished
    created_by: str
    created_at: UtcDatetime
    closed_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    duration_s: float | None
    previous_run_id: int | None
    totals: dict[str, Any]
    compare: dict[str, Any]
    progress: dict[str, int] = Field(default_factory=dict)
    url: str = ""
    culprits: list[CulpritRead] = Field(default_factory=list)


class SuiteRunList(BaseModel):
    items: list[SuiteRunRead]
    next_cursor: int | None


class SuiteRead(OrmModel):
    name: str
    flaky_window: int
    flaky_min_flips: int
    drift_growth: float = 10.0
    drift_window: int = 10
    perf_threshold: float = 10.0
    webhook_configured: bool = False
    created_at: UtcDatetime
    latest_run: SuiteRunRead | None = None


class SuiteList(BaseModel):
    items: list[SuiteRead]


class SuiteUpdate(BaseModel):
    """Admin settings of a suite; omitted fields stay as they are, "" clears the webhook."""
    flaky_window: int | None = Field(default=None, ge=2, le=100, description="runs looked at for flips")
    flaky_min_flips: int | None = Field(default=None, ge=1, le=100, description="flips that make a case flaky")
    drift_growth: float | None = Field(default=None, gt=1, le=1e6,
                                       description="an error this many times its median drifts (docs/ci.md)")
    drift_window: int | None = Field(default=None, ge=3, le=100, description="earlier runs the median is over")
    perf_threshold: float | None = Field(default=None, gt=0, le=1000,
                                         description="a SIM cost estimate this many percent over the previous "
                                                     "run's is a performance regression (docs/ci.md)")
    webhook_url: str | None = Field(default=None, max_length=500, description="http(s) URL; '' to remove")
    webhook_secret: str | None = Field(default=None, max_length=200, description="signs payloads; '' to remove")


class OperatorAccepted(BaseModel):
    operator: str
    submission_id: int | None
    jobs: list[JobBrief]
    reused: dict[str, list[int]] = Field(description="mode -> the jobs whose results were reused")
    not_reused: dict[str, str] = Field(description="mode -> why it runs")
    cases: list[str]
    replay: bool = Field(description="the operator was already in this run with the same files")


class SuiteRunResultRead(BaseModel):
    id: int
    operator: str
    case: str
    mode: str
    attempt: int
    status: str  # pending | done
    verdict: str | None
    source: str  # worker | reused | upload
    provenance: str
    verified: bool
    job_id: int | None
    reused_from_job_id: int | None
    case_result_id: int | None
    max_abs_diff: float | None
    max_rel_diff: float | None
    graph_max_abs_diff: float | None
    rtol: float | None
    atol: float | None
    diagnosis_rules: str
    error: str | None
    flips: int
    flaky: bool
    note: str
    duration_s: float | None = None
    stage: str | None = None  # what a not_run's outcome hangs on (runtime.exit_codes.TABLE)


class SuiteRunResultList(BaseModel):
    items: list[SuiteRunResultRead]
    next_cursor: int | None


class ChangeRead(BaseModel):
    operator: str
    case: str
    mode: str
    before: str | None
    after: str | None
    why: str
    outcome_before: str = ""  # in words (runtime.vocabulary)
    outcome_after: str = ""


class ComparisonRead(BaseModel):
    run_id: int
    other_id: int | None  # None: there is no earlier run on this branch
    counts: dict[str, int]
    regressions: list[ChangeRead]
    fixes: list[ChangeRead]
    changed: list[ChangeRead]
    new: list[ChangeRead]
    vanished: list[ChangeRead]
    new_flags: list[ChangeRead]


class WebhookDeliveryRead(OrmModel):
    id: int
    event: str
    status: str  # pending | delivered | failed
    attempts: int
    last_status_code: int | None
    last_error: str | None
    log: list[dict[str, Any]]
    created_at: UtcDatetime
    next_attempt_at: UtcDatetime
    delivered_at: UtcDatetime | None


class WebhookDeliveryList(BaseModel):
    items: list[WebhookDeliveryRead]


class IngestRead(BaseModel):
    suite_run_id: int
    url: str
    stored: int
    duplicates: int
    unverified: int
    missing_fingerprint: list[str]
    operators: list[str]
    jobs: list[int]
