"""A benchmark suite's tasks × runs, as the dashboard's benchmark page shows it (docs/kernelbench.md §6)."""
from __future__ import annotations

from fastapi import APIRouter

from server.api.deps import SessionDep
from server.auth import ReadCaller
from server.schemas.benchmark import BenchmarkRead
from server.schemas.common import ErrorRead
from server.services import benchmark_view

router = APIRouter(prefix="/benchmarks", tags=["suites"])


@router.get("/{name}", response_model=BenchmarkRead, summary="A benchmark suite: tasks × runs, levels, disagreements",
            responses={404: {"model": ErrorRead}})
def read_benchmark(name: str, caller: ReadCaller, session: SessionDep) -> BenchmarkRead:
    """Our verdict per task and run (newest first), the gym's own verdict, pass rates per level."""
    return BenchmarkRead.model_validate(benchmark_view.as_dict(benchmark_view.view(session, name)))
