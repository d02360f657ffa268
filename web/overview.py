"""The overview: the operator matrix, verdict counts, filters and pagination."""
from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from server.api.deps import SessionDep
from server.errors import InvalidInput
from server.models import CaseResult
from server.models.base import utcnow
from server.models.job import QUEUED, RUNNING
from server.services import coverage, queries
from server.services.combined import COMBINED, FLAGGED
from web import format as fmt
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
PER_PAGE_CHOICES = (25, 50, 100, 200)
ACTIVE = (QUEUED, RUNNING)  # while any job is in these states the overview refreshes itself
REFRESH_S = 10
# The case table a row opens: these columns of each case's latest results, loaded for one operator
# when the row is opened (/cases?operator=NAME), never for a whole page (docs/dashboard.md §6).
CASE_COLUMNS = (CaseResult.id, CaseResult.job_id, CaseResult.verdict, CaseResult.max_abs_diff, CaseResult.nan_count,
                CaseResult.output_written, CaseResult.graph_status, CaseResult.graph_max_abs_diff, CaseResult.atol,
                CaseResult.aicore_time_us, CaseResult.case, CaseResult.stage)
SINCE = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}


def operator_row(op: Any) -> dict[str, Any]:
    """What one matrix row shows: the operator's row alone, its cases counted at write time
    (results.refresh_operator), so that a page's cost does not grow with its cases."""
    summary = SimpleNamespace(max_abs_diff=op.sim_max_abs_diff, verdict=op.sim_verdict, nan_count=op.sim_nan_count,
                              output_written=False if op.sim_unwritten else None)
    flagged = op.combined_verdict in FLAGGED
    return {"op": op, "sim_diff": fmt.sim_diff(summary if op.latest_sim_job_id else None, flagged),
            "flagged": flagged, "coverage": coverage.of_operator(op)}


def case_rows(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case as a case table shows it, its SIM diff worded (queries.case_summaries' rows)."""
    return [dict(c, sim_diff=fmt.sim_diff(c["sim"], c["combined_verdict"] in FLAGGED)) for c in cases]


@router.get("/", response_class=HTMLResponse, name="overview")
def overview(request: Request, session: SessionDep, caller: Reader,
             verdict: Annotated[list[str], Query()] = [],  # noqa: B006 - FastAPI copies defaults
             outcome: Annotated[list[str], Query()] = [],  # noqa: B006
             mode: str = "", branch: str = "", author: str = "", since: str = "", q: str = "",
             page: Annotated[int, Query(ge=1, le=100_000)] = 1,
             per_page: Annotated[int, Query(ge=1, le=queries.MAX_PAGE)] = 50) -> HTMLResponse:
    """Real defects first (list_operators orders by verdict severity), then flagged, then the rest."""
    if since and since not in SINCE:
        raise InvalidInput(f"unknown time window {since!r}; use one of {', '.join(SINCE)}")
    f = queries.OperatorFilter(verdict=[v for v in verdict if v], outcome=[o for o in outcome if o], q=q.strip(),
                               mode=mode or None,
                               branch=branch.strip() or None, author=author.strip() or None,
                               since=utcnow() - SINCE[since] if since else None)
    operators, total = queries.list_operators(session, f, limit=per_page, offset=(page - 1) * per_page)
    params = {"verdict": f.verdict, "outcome": f.outcome, "mode": mode, "branch": branch, "author": author, "since": since, "q": q,
              "per_page": per_page if per_page != 50 else ""}
    pages = max(1, -(-total // per_page))
    active = queries.count_jobs(session, ACTIVE)
    return render(request, "overview.html", caller, active=active, refresh_s=REFRESH_S,
                  rows=[operator_row(op) for op in operators], total=total,
                  counts=queries.outcome_counts(session), verdicts=COMBINED, flagged=FLAGGED, f=f,
                  params=params, mode=mode, since=since, since_choices=list(SINCE), page=page, pages=pages,
                  per_page=per_page, per_page_choices=PER_PAGE_CHOICES, labels=queries.label_values(session),
                  page_url=lambda n: "/?" + _query(params, page=n),
                  csv_query=_query({k: v for k, v in params.items() if k in ('verdict', 'mode', 'branch', 'author', 'q')}),
                  outcome_url=lambda o: "/?" + _query(params, outcome=[o], verdict=[], page=1))


def _query(params: dict[str, Any], **changes: Any) -> str:
    merged = {**params, **changes}
    return urlencode([(k, v) for k, vs in merged.items() for v in (vs if isinstance(vs, list) else [vs])
                      if v not in ("", None) and not (k == "page" and v == 1)])


@router.get("/cases", response_class=HTMLResponse, name="overview_cases")
def overview_cases(request: Request, session: SessionDep, caller: Reader,
                   operator: Annotated[str, Query(min_length=1, max_length=200)]) -> HTMLResponse:
    """One overview row's case table, on a page of its own: what the row's <details> shows when opened
    (web/static/app.js lifts the table in), and where it links without JavaScript."""
    op = queries.get_operator(session, operator)
    cases = case_rows(queries.case_summaries(session, [op.id], *CASE_COLUMNS)[op.id])
    return render(request, "overview_cases.html", caller, op=op, row=operator_row(op), cases=cases)
