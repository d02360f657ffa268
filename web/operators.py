"""The operator page: max |diff| history (all cases, each case, one case), the cost-model trend, the cases."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from server.api.deps import SessionDep, SettingsDep
from server.models.base import utcnow
from server.models.job import AWAITING_NPU, QUEUED, RUNNING
from server.services import commit_history, history, history_spans, queries, workers
from server.services.combined import FLAGGED, MEMORY_REASON
from web import case_charts, charts, diagnoses, diff_chart, drift_chart, measured
from web.deps import Reader, render
from web.errors import HtmlRoute
from web.overview import case_rows, operator_row

router = APIRouter(route_class=HtmlRoute)
HISTORY_RUNS = history.DEFAULT_RUNS  # the default window: the last runs, drawn one point each
# Longer ranges are drawn as min/max per time bucket, at most this many per mode: a year in 8-day
# buckets, read from the spans kept at write time, so that it draws about as many points as the
# last 100 runs whatever the operator's depth (docs/history.md §2, §6).
RANGES = {"90d": (90, 100), "1y": (365, 50)}  # days, buckets
Range = Literal["runs", "90d", "1y"]
RECENT_JOBS = 20
PENDING = (QUEUED, RUNNING, AWAITING_NPU)  # an NPU job in these states is what "awaiting NPU" may point at


def history_window(range_: str, case: str | None = None) -> history.Window:
    """?range=90d|1y: the last days, downsampled; runs (the default): the last HISTORY_RUNS runs."""
    if range_ not in RANGES:
        return history.Window(limit=HISTORY_RUNS, case=case)
    days, buckets = RANGES[range_]
    # From a span boundary: the range reads whole spans only, never runs (docs/history.md §7).
    return history.Window(since=history_spans.aligned_since(utcnow(), days), buckets=buckets, case=case)


@router.get("/operators/{name:path}", response_class=HTMLResponse, name="operator")
def operator_page(request: Request, name: str, session: SessionDep, settings: SettingsDep, caller: Reader,
                  range: Range = "runs",  # noqa: A002 (the query parameter's name)
                  case: Annotated[str | None, Query(max_length=200)] = None) -> HTMLResponse:
    """?case=NAME: that case alone in the history; else all cases, then each case's own small chart."""
    operator = queries.get_operator(session, name)
    case = case or None
    runs = history.operator_history(session, operator.id, history_window(range, case)).points
    # The last runs, one point each, are the runs the per-case charts and the commit table read: walked once.
    walked = history.runs_of(runs) if range not in RANGES and case is None else None
    failed = queries.graph_failed_jobs(session, [p["job_id"] for p in runs], case)
    row = dict(operator_row(operator), cases=case_rows(queries.case_summaries(session, [operator.id])[operator.id]))
    per_case = None if case else case_charts.build(session, operator.id, history_window(range), runs,
                                                   {c["case"]: c["combined_verdict"] for c in row["cases"]}, walked)
    if per_case and all(c.chart.empty or c.chart.compact for c in per_case.shown):
        per_case = None  # one run so far: each case's numbers are in the cases table already
    jobs = queries.recent_jobs(session, RECENT_JOBS, operator_id=operator.id)
    return render(request, "operator.html", caller, op=operator, row=row, history=runs, range=range,
                  diagnoses=diagnoses.group(row["cases"]),
                  measured=measured.bars([measured.of_case(c["sim"], c["npu"]) for c in row["cases"]]),
                  npu_pending=[j for j in jobs if j.mode == "npu" and j.status in PENDING],
                  npu_online=workers.serving(session, settings.job_heartbeat_s, ("npu",))["npu"]["online"] > 0,
                  graph_memory=any(c["reason"] == MEMORY_REASON for c in row["cases"]),
                  history_runs=HISTORY_RUNS, case=case, per_case=per_case,
                  flagged=operator.combined_verdict in FLAGGED,
                  diff_chart=diff_chart.build(runs, failed), graph_failed=failed,
                  time_chart=charts.linear_trend(runs, "aicore_time_us", "AICore time", "cost", "µs"),
                  util_chart=charts.linear_trend(runs, "utilization", "utilisation", "util", "%", scale=100),
                  jobs=jobs, drifting=drift_chart.for_operator(session, operator.name),
                  commits=commit_history.by_commit(session, operator.id, runs=walked))
