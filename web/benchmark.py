"""A benchmark suite's page: tasks × runs, pass rate per level, disagreements with the gym first (docs/kernelbench.md §6)."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from server.api.deps import SessionDep
from server.services import benchmark_view
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)


@router.get("/benchmarks/{suite}", response_class=HTMLResponse, name="benchmark")
def benchmark_page(request: Request, suite: str, session: SessionDep, caller: Reader) -> HTMLResponse:
    v = benchmark_view.view(session, suite)
    return render(request, "benchmark.html", caller, v=v, disagreeing=sum(t.disagrees for t in v.tasks))
