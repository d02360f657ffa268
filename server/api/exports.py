"""CSV downloads of the tables the dashboard shows (the same filters as the JSON endpoints)."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query
from fastapi.responses import Response

from runtime.modes import Mode
from server.api.deps import SessionDep
from server.auth import ReadCaller
from server.schemas.common import ErrorRead, as_utc
from server.services import csv_export, queries, suite_queries, suite_runs

router = APIRouter(tags=["exports"])
CSV = {"content": {"text/csv": {}}}
MAX_OPERATORS = 100_000


def _csv(text: str, filename: str) -> Response:
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": attachment(filename)})


def attachment(filename: str) -> str:
    """A Content-Disposition for any name (RFC 6266): a plain ASCII fallback, and the name itself
    percent-encoded in `filename*`. An operator name with CR, LF or quotes once broke the header,
    and a non-Latin-1 one made it a 500."""
    plain = "".join(ch if ch.isascii() and ch.isprintable() and ch not in '"\\;%' else "_" for ch in filename)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"


@router.get("/operators.csv", response_class=Response, summary="The operator table as CSV",
            responses={200: CSV, 422: {"model": ErrorRead}})
def operators_csv(caller: ReadCaller, session: SessionDep,
                  verdict: Annotated[list[str], Query(description="combined verdict (repeatable)")] = [],  # noqa: B006
                  q: Annotated[str, Query(max_length=200)] = "", mode: Mode | None = None,
                  branch: str | None = None, author: str | None = None, since: datetime | None = None) -> Response:
    """Every operator matching the filters, real defects first."""
    f = queries.OperatorFilter(verdict=list(verdict), q=q, mode=mode, branch=branch, author=author,
                               since=as_utc(since) if since else None)
    rows, _ = queries.list_operators(session, f, limit=MAX_OPERATORS)
    return _csv(csv_export.operators(rows), "operators.csv")


@router.get("/operators/{name}/cases.csv", response_class=Response, summary="An operator's case table as CSV",
            responses={200: CSV, 404: {"model": ErrorRead}})
def cases_csv(name: str, caller: ReadCaller, session: SessionDep) -> Response:
    """Each case's verdict across modes with its latest SIM and NPU figures and their provenance."""
    operator = queries.get_operator(session, name)
    return _csv(csv_export.cases(operator.name, queries.operator_cases(session, operator.id)),
                f"{operator.name}-cases.csv")


@router.get("/suite-runs/{run_id}/results.csv", response_class=Response, summary="A suite run's results as CSV",
            responses={200: CSV, 404: {"model": ErrorRead}})
def results_csv(run_id: int, caller: ReadCaller, session: SessionDep,
                verdict: Annotated[list[str], Query()] = [],  # noqa: B006
                mode: Mode | None = None, operator: str | None = None,
                show: Literal["", "failing", "flaky", "reused", "upload"] = "") -> Response:
    run = suite_runs.get_run(session, run_id)
    f = suite_queries.ResultFilter(verdict=[v for v in verdict if v], mode=mode, operator=operator or None,
                                   flaky_only=show == "flaky", failing_only=show == "failing",
                                   source=show if show in ("reused", "upload") else None)
    items, cursor = suite_queries.run_results(session, run, f, None, suite_queries.MAX_PAGE)
    while cursor is not None:
        more, cursor = suite_queries.run_results(session, run, f, cursor, suite_queries.MAX_PAGE)
        items.extend(more)
    return _csv(csv_export.results(items), f"suite-run-{run.id}.csv")
