"""The operator page: diff history on a log scale, the cost-model trend, the cases table."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from server.api.deps import SessionDep
from server.services import commit_history, queries
from server.services.combined import FLAGGED
from web import charts
from web.deps import Reader, render
from web.errors import HtmlRoute
from web.overview import operator_row

router = APIRouter(route_class=HtmlRoute)
HISTORY_RUNS = 200
RECENT_JOBS = 20


@router.get("/operators/{name:path}", response_class=HTMLResponse, name="operator")
def operator_page(request: Request, name: str, session: SessionDep, caller: Reader) -> HTMLResponse:
    operator = queries.get_operator(session, name)
    history = queries.operator_history(session, operator.id, limit=HISTORY_RUNS)
    row = operator_row(operator, queries.case_summaries(session, [operator.id])[operator.id])
    return render(request, "operator.html", caller, op=operator, row=row, history=history,
                  flagged=operator.combined_verdict in FLAGGED,
                  diff_chart=charts.diff_history(history),
                  time_chart=charts.linear_trend(history, "aicore_time_us", "AICore time", "cost", "µs"),
                  util_chart=charts.linear_trend(history, "utilization", "utilisation", "util", "%", scale=100),
                  jobs=queries.recent_jobs(session, RECENT_JOBS, operator_id=operator.id),
                  commits=commit_history.by_commit(session, operator.id))
