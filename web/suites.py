"""Suite runs on the dashboard: the list (by suite, branch, commit and date), one run, and a comparison."""
from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from runtime.modes import MODES
from runtime import verdicts
from server.api.deps import SessionDep
from server.errors import InvalidInput
from server.models.base import utcnow
from server.models.suite_run import FINISHED
from server.services import culprits, suite_finish, suite_queries, suite_runs
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
SINCE = {"24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90)}
RESULTS_PER_PAGE = 200
CHANGES_SHOWN = 200


@router.get("/suites", response_class=HTMLResponse, name="suites")
def suites_page(request: Request, session: SessionDep, caller: Reader, suite: str = "", branch: str = "",
                commit: str = "", since: str = "", cursor: Annotated[int | None, Query(ge=1)] = None) -> HTMLResponse:
    """Every suite with its latest run, and the runs newest first (filter by suite, branch, commit, date)."""
    if since and since not in SINCE:
        raise InvalidInput(f"unknown time window {since!r}; use one of {', '.join(SINCE)}")
    f = suite_queries.RunFilter(suite=suite.strip() or None, branch=branch.strip() or None,
                                commit=commit.strip() or None, since=utcnow() - SINCE[since] if since else None)
    runs, next_cursor = suite_queries.list_runs(session, f, cursor, limit=50)
    params = {"suite": suite, "branch": branch, "commit": commit, "since": since}
    return render(request, "suites.html", caller, suites=suite_queries.list_suites(session), runs=runs, f=f,
                  since=since, since_choices=list(SINCE), filtered=any(params.values()),
                  next_url=f"/suites?{_query(params, cursor=next_cursor)}" if next_cursor else None)


@router.get("/suite-runs/{run_id}", response_class=HTMLResponse, name="suite_run")
def suite_run_page(request: Request, run_id: int, session: SessionDep, caller: Reader,
                   verdict: str = "", mode: str = "", operator: str = "", show: str = "",
                   cursor: Annotated[int | None, Query(ge=0)] = None) -> HTMLResponse:
    """A run: labels, totals, what changed since the previous run on its branch, and every result."""
    run = suite_runs.get_run(session, run_id)
    suite_runs.settle(session, run)
    if run.status == FINISHED and "unverified_by_mode" not in (run.totals or {}):
        run.totals = suite_finish.totals(session, run)  # stored by an older version: counted attempts, unverified
    if verdict and verdict not in verdicts.VERDICTS:
        raise InvalidInput(f"unknown verdict {verdict!r}")
    if mode and mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; use sim or npu")
    if show not in ("", "failing", "flaky", "reused", "upload"):
        raise InvalidInput(f"unknown view {show!r}")
    f = suite_queries.ResultFilter(verdict=[verdict] if verdict else [], mode=mode or None,
                                   operator=operator.strip() or None, flaky_only=show == "flaky",
                                   failing_only=show == "failing", source=show if show in ("reused", "upload") else None)
    results, next_cursor = suite_queries.run_results(session, run, f, cursor, RESULTS_PER_PAGE)
    results = failing_first(results)
    other, comparison = suite_queries.comparison(session, run, None)
    params = {"verdict": verdict, "mode": mode, "operator": operator, "show": show}
    return render(request, "suite_run.html", caller, run=run, results=results, other=other,
                  cmp=comparison.as_dict(limit=CHANGES_SHOWN), progress=suite_runs.progress(session, run.id),
                  deliveries=suite_queries.deliveries(session, run.id), params=params, verdicts=verdicts.VERDICTS,
                  recent=_recent(session, run), latest=suite_queries.latest_attempts(session, run),
                  culprits=culprits.by_operator(session, run.id),
                  csv_url=f"/api/v1/suite-runs/{run.id}/results.csv?{_query(params)}",
                  next_url=f"/suite-runs/{run.id}?{_query(params, cursor=next_cursor)}#results" if next_cursor else None,
                  filtered=any(params.values()))


@router.get("/suite-runs/{run_id}/compare/{other_id}", response_class=HTMLResponse, name="suite_compare")
def compare_page(request: Request, run_id: int, other_id: int, session: SessionDep, caller: Reader) -> HTMLResponse:
    """Two runs of one suite side by side: regressions, fixes, changed, new and vanished cases."""
    run = suite_runs.get_run(session, run_id)
    other, comparison = suite_queries.comparison(session, run, other_id)
    return render(request, "suite_compare.html", caller, run=run, other=other, cmp=comparison.as_dict(),
                  recent=_recent(session, run))


@router.get("/suite-runs", response_class=HTMLResponse, include_in_schema=False)
def compare_form(request: Request, session: SessionDep, caller: Reader, run: int = 0, other: int = 0) -> HTMLResponse:
    """The compare form's target (works without JavaScript): /suite-runs?run=N&other=M."""
    from fastapi.responses import RedirectResponse

    if run < 1 or other < 1:
        raise InvalidInput("choose two runs to compare")
    return RedirectResponse(f"/suite-runs/{run}/compare/{other}", status_code=303)  # type: ignore[return-value]


def failing_first(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A page of results with the cases failing for their mode first, as the overview orders operators
    (the query pages by id; a run of up to RESULTS_PER_PAGE results is one page)."""
    def failing(r: dict[str, Any]) -> bool:
        return r["verdict"] is not None and not verdicts.acceptable(r["verdict"], r["mode"])

    return sorted(results, key=lambda r: (not failing(r), r["operator"], r["case"], r["mode"], r["attempt"]))


def _recent(session: Any, run: Any) -> list[Any]:
    """Other runs of the suite to compare with (newest first)."""
    rows, _ = suite_queries.list_runs(session, suite_queries.RunFilter(suite=run.name), limit=30)
    return [r for r in rows if r.id != run.id]


def _query(params: dict[str, Any], **changes: Any) -> str:
    merged = {**params, **changes}
    return urlencode([(k, v) for k, v in merged.items() if v not in ("", None)])

