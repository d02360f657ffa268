"""The coverage page: operators × {SIM, graph verify, NPU}, how many cases each mode judged."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from server.api.deps import SessionDep
from server.services import coverage, queries
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
PER_PAGE = 100


@router.get("/coverage", response_class=HTMLResponse, name="coverage")
def coverage_page(request: Request, session: SessionDep, caller: Reader,
                  page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> HTMLResponse:
    operators, total = queries.list_operators(session, queries.OperatorFilter(), limit=PER_PAGE,
                                              offset=(page - 1) * PER_PAGE)
    covs = coverage.for_operators(session, [op.id for op in operators])
    rows = [{"op": op, "cov": covs[op.id]} for op in operators]
    full = {m: sum(1 for r in rows if r["cov"].full(m)) for m in coverage.MODES}
    return render(request, "coverage.html", caller, rows=rows, total=total, full=full, modes=coverage.MODES,
                  labels=coverage.LABELS, page=page, pages=max(1, -(-total // PER_PAGE)))
