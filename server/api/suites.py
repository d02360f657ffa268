"""Suites and suite runs: open a run, submit operators into it, close it, read results and comparisons."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response, status
from sqlalchemy.orm import Session

from runtime.modes import Mode
from server.api.deps import (
    BlobsDep,
    NewSubmissionDep,
    ProducerDep,
    SessionDep,
    SettingsDep,
    enqueue_after_commit,
)
from server.auth import AdminCaller, ReadCaller, SubmitCaller
from server.config import Settings
from server.models import Suite, SuiteRun
from server.schemas.common import ErrorRead, as_utc
from server.schemas.submission import JobBrief
from server.schemas.suite import (
    ChangeRead,
    ComparisonRead,
    CulpritList,
    CulpritRead,
    CulpritsCreate,
    OperatorAccepted,
    SuiteList,
    SuiteRead,
    SuiteRunCreate,
    SuiteRunList,
    SuiteRunRead,
    SuiteRunResultList,
    SuiteRunResultRead,
    SuiteUpdate,
    WebhookDeliveryList,
    WebhookDeliveryRead,
)
from server.services import culprits, ownership, suite_queries, suite_runs, suite_submit, webhook_targets

suites = APIRouter(prefix="/suites", tags=["suite runs"])
runs = APIRouter(prefix="/suite-runs", tags=["suite runs"])
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorRead}}


def run_url(request: Request, settings: Settings, run_id: int) -> str:
    base = settings.public_url or str(request.base_url)
    return f"{base.rstrip('/')}/suite-runs/{run_id}"


def run_read(request: Request, settings: Settings, session: Session, run: SuiteRun) -> SuiteRunRead:
    return SuiteRunRead.model_validate(run).model_copy(update={
        "progress": suite_runs.progress(session, run.id), "url": run_url(request, settings, run.id),
        "culprits": [CulpritRead.model_validate(c) for c in culprits.listing(session, run.id)]})


@suites.get("", response_model=SuiteList, summary="Suites with their latest run")
def list_suites(request: Request, caller: ReadCaller, session: SessionDep, settings: SettingsDep) -> SuiteList:
    return SuiteList(items=[_suite_read(request, settings, session, s, latest)
                            for s, latest in suite_queries.list_suites(session)])


def _suite_read(request: Request, settings: Settings, session: Session, suite: Suite,
                latest: SuiteRun | None) -> SuiteRead:
    return SuiteRead.model_validate(suite).model_copy(update={
        "webhook_configured": bool(suite.webhook_url),
        "latest_run": run_read(request, settings, session, latest) if latest else None})


@suites.get("/{name}", response_model=SuiteRead, summary="A suite's settings and latest run", responses=NOT_FOUND)
def read_suite(name: str, request: Request, caller: ReadCaller, session: SessionDep, settings: SettingsDep) -> SuiteRead:
    suite = suite_runs.get_suite(session, name)
    latest = suite_queries.list_runs(session, suite_queries.RunFilter(suite=suite.name), limit=1)[0]
    return _suite_read(request, settings, session, suite, latest[0] if latest else None)


@suites.patch("/{name}", response_model=SuiteRead, summary="Change a suite's flaky window or webhook",
              responses={**NOT_FOUND, 422: {"model": ErrorRead}})
def update_suite(name: str, body: SuiteUpdate, request: Request, caller: AdminCaller, session: SessionDep,
                 settings: SettingsDep) -> SuiteRead:
    """Admin only: the webhook URL may carry a secret, so it is never shown back."""
    suite = suite_runs.get_suite(session, name)
    if body.webhook_url:
        webhook_targets.check(body.webhook_url, settings.webhook_allow_loopback)
    for field in ("flaky_window", "flaky_min_flips", "drift_growth", "drift_window", "perf_threshold"):
        if getattr(body, field) is not None:
            setattr(suite, field, getattr(body, field))
    if body.webhook_url is not None:
        suite.webhook_url = body.webhook_url or None
    if body.webhook_secret is not None:
        suite.webhook_secret = body.webhook_secret or None
    return _suite_read(request, settings, session, suite, None)


@runs.post("", status_code=status.HTTP_201_CREATED, response_model=SuiteRunRead, summary="Open a suite run",
           responses={200: {"model": SuiteRunRead, "description": "the run with this suite and key exists"},
                      403: {"model": ErrorRead}, 422: {"model": ErrorRead}})
def open_run(body: SuiteRunCreate, request: Request, response: Response, caller: SubmitCaller, session: SessionDep,
             settings: SettingsDep) -> SuiteRunRead:
    """Idempotent by (suite, run_key): a retried call gets the same run with 200."""
    run, created = suite_runs.open_run(session, body.suite, body.run_key, body.labels, list(body.modes),
                                       body.reuse, caller.name, caller.allows("admin"))
    if not created:
        response.status_code = status.HTTP_200_OK
    return run_read(request, settings, session, run)


@runs.get("", response_model=SuiteRunList, summary="Suite runs, newest first")
def list_runs(request: Request, caller: ReadCaller, session: SessionDep, settings: SettingsDep,
              suite: str | None = None, branch: str | None = None,
              commit: Annotated[str | None, Query(description="a commit or its prefix")] = None,
              since: datetime | None = None, until: datetime | None = None,
              cursor: Annotated[int | None, Query(ge=1)] = None,
              limit: Annotated[int, Query(ge=1, le=500)] = 50) -> SuiteRunList:
    f = suite_queries.RunFilter(suite=suite, branch=branch, commit=commit, since=as_utc(since) if since else None,
                                until=as_utc(until) if until else None)
    items, next_cursor = suite_queries.list_runs(session, f, cursor, limit)
    return SuiteRunList(items=[run_read(request, settings, session, r) for r in items], next_cursor=next_cursor)


@runs.get("/{run_id}", response_model=SuiteRunRead, summary="A suite run with its progress and totals",
          responses=NOT_FOUND)
def read_run(run_id: int, request: Request, caller: ReadCaller, session: SessionDep,
             settings: SettingsDep) -> SuiteRunRead:
    run = suite_runs.get_run(session, run_id)
    suite_runs.settle(session, run)
    return run_read(request, settings, session, run)


@runs.post("/{run_id}/submissions", status_code=status.HTTP_202_ACCEPTED, response_model=OperatorAccepted,
           summary="Submit one operator into the run (reusing unchanged results)",
           responses={200: {"model": OperatorAccepted, "description": "the operator was already submitted"},
                      **NOT_FOUND, 403: {"model": ErrorRead}, 409: {"model": ErrorRead}, 413: {"model": ErrorRead},
                      422: {"model": ErrorRead}, 429: {"model": ErrorRead}})
def submit_operator(run_id: int, response: Response, caller: SubmitCaller, session: SessionDep,
                    settings: SettingsDep, blobs: BlobsDep, producer: ProducerDep,
                    new: NewSubmissionDep) -> OperatorAccepted:
    """The same body as POST /submissions; modes default to the run's."""
    run = suite_runs.get_run(session, run_id)
    ownership.check_run(run, caller.name, caller.allows("admin"))
    new.submitted_by, new.admin = caller.name, caller.allows("admin")
    out = suite_submit.submit_operator(session, blobs, settings, run, new)
    if out.replay:
        response.status_code = status.HTTP_200_OK
    else:
        for job in out.jobs:
            enqueue_after_commit(session, producer, job)
    return OperatorAccepted(operator=out.operator, submission_id=out.submission_id,
                            jobs=[JobBrief.model_validate(j) for j in out.jobs], reused=out.reused,
                            not_reused=out.notes, cases=out.cases, replay=out.replay)


@runs.post("/{run_id}/close", response_model=SuiteRunRead, summary="Every operator is submitted",
           responses={**NOT_FOUND, 403: {"model": ErrorRead}})
def close_run(run_id: int, request: Request, caller: SubmitCaller, session: SessionDep,
              settings: SettingsDep) -> SuiteRunRead:
    """The run finishes once its last result is in (at once when everything was reused)."""
    run = suite_runs.get_run(session, run_id)
    ownership.check_run(run, caller.name, caller.allows("admin"))
    run = suite_runs.close(session, run)
    return run_read(request, settings, session, run)


@runs.post("/{run_id}/culprits", response_model=CulpritList, summary="Name the commit behind regressed operators",
           responses={**NOT_FOUND, 403: {"model": ErrorRead}, 422: {"model": ErrorRead}})
def attach_culprits(run_id: int, body: CulpritsCreate, caller: SubmitCaller, session: SessionDep) -> CulpritList:
    """What a bisect found (`ci run --bisect`, `crosscheck bisect --suite-run`): one culprit per operator;
    the same again changes nothing, another commit replaces it. Answers every culprit of the run."""
    run = suite_runs.get_run(session, run_id)
    ownership.check_run(run, caller.name, caller.allows("admin"))
    rows = culprits.attach(session, run, body.items, caller.name)
    return CulpritList(items=[CulpritRead.model_validate(c) for c in rows])


@runs.get("/{run_id}/culprits", response_model=CulpritList, summary="The commits bisects named for the run",
          responses=NOT_FOUND)
def read_culprits(run_id: int, caller: ReadCaller, session: SessionDep) -> CulpritList:
    suite_runs.get_run(session, run_id)
    return CulpritList(items=[CulpritRead.model_validate(c) for c in culprits.listing(session, run_id)])


@runs.get("/{run_id}/results", response_model=SuiteRunResultList, summary="A run's results with provenance",
          responses=NOT_FOUND)
def read_results(run_id: int, caller: ReadCaller, session: SessionDep,
                 verdict: Annotated[list[str], Query(description="per-mode verdict (repeatable)")] = [],  # noqa: B006
                 mode: Mode | None = None, operator: str | None = None,
                 source: Literal["worker", "reused", "upload"] | None = None,
                 flaky: Annotated[bool, Query(description="only flaky cases")] = False,
                 failing: Annotated[bool, Query(description="only cases not acceptable for their mode")] = False,
                 cursor: Annotated[int | None, Query(ge=0)] = None,
                 limit: Annotated[int, Query(ge=1, le=suite_queries.MAX_PAGE)] = 1000) -> SuiteRunResultList:
    run = suite_runs.get_run(session, run_id)
    f = suite_queries.ResultFilter(verdict=list(verdict), mode=mode, operator=operator, source=source,
                                   flaky_only=flaky, failing_only=failing)
    items, next_cursor = suite_queries.run_results(session, run, f, cursor, limit)
    return SuiteRunResultList(items=[SuiteRunResultRead(**i) for i in items], next_cursor=next_cursor)


def _comparison(session: Session, run_id: int, other_id: int | None) -> ComparisonRead:
    run = suite_runs.get_run(session, run_id)
    other, result = suite_queries.comparison(session, run, other_id)
    data = result.as_dict()
    return ComparisonRead(run_id=run.id, other_id=other.id if other else None, counts=data["counts"],
                          **{k: [ChangeRead(**c) for c in data[k]]
                             for k in ("regressions", "fixes", "changed", "new", "vanished", "new_flags")})


@runs.get("/{run_id}/compare", response_model=ComparisonRead, summary="Against the previous run on the branch",
          responses=NOT_FOUND)
def compare_previous(run_id: int, caller: ReadCaller, session: SessionDep) -> ComparisonRead:
    return _comparison(session, run_id, None)


@runs.get("/{run_id}/compare/{other_id}", response_model=ComparisonRead, summary="Against another run of the suite",
          responses={**NOT_FOUND, 422: {"model": ErrorRead}})
def compare_runs(run_id: int, other_id: int, caller: ReadCaller, session: SessionDep) -> ComparisonRead:
    """Regressions, fixes, changed, new and vanished cases of run_id relative to other_id."""
    return _comparison(session, run_id, other_id)


@runs.get("/{run_id}/webhooks", response_model=WebhookDeliveryList, summary="The run's webhook delivery log",
          responses=NOT_FOUND)
def read_deliveries(run_id: int, caller: ReadCaller, session: SessionDep) -> WebhookDeliveryList:
    suite_runs.get_run(session, run_id)
    return WebhookDeliveryList(items=[WebhookDeliveryRead.model_validate(d)
                                      for d in suite_queries.deliveries(session, run_id)])
