"""Operators: the overview with filters, one operator's cases across modes, and its history."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from runtime.modes import Mode
from server.api.deps import SessionDep, read_only
from server.auth import ReadCaller
from server.schemas.common import ErrorRead, as_utc
from server.models import Operator
from server.schemas.operator import (
    CaseCoverage,
    CaseResultBrief,
    HistoryDay,
    HistoryPoint,
    OperatorCase,
    OperatorDetail,
    OperatorHistory,
    OperatorList,
    OperatorRead,
)
from server.services import combined, coverage, history, queries

router = APIRouter(prefix="/operators", tags=["operators"])
CombinedVerdict = Literal[combined.COMBINED]  # type: ignore[valid-type]


@router.get("", response_model=OperatorList, summary="Operators, real defects first")
@read_only
def list_operators(
    caller: ReadCaller, session: SessionDep,
    verdict: Annotated[list[CombinedVerdict], Query(description="combined verdict (repeatable)")] = [],  # noqa: B006
    q: Annotated[str, Query(max_length=200, description="substring of the name")] = "",
    mode: Mode | None = None, branch: str | None = None, author: str | None = None, since: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=queries.MAX_PAGE)] = 50, offset: Annotated[int, Query(ge=0)] = 0,
) -> OperatorList:
    """Filtered operators with the total and the count of operators per combined verdict."""
    f = queries.OperatorFilter(verdict=list(verdict), q=q, mode=mode, branch=branch, author=author,
                               since=as_utc(since) if since else None)
    rows, total = queries.list_operators(session, f, limit, offset)
    covs = coverage.for_operators(session, [r.id for r in rows])
    return OperatorList(items=[_read(r, covs[r.id]) for r in rows], total=total,
                        counts=queries.verdict_counts(session))


def _read(operator: Operator, cov: coverage.Coverage) -> OperatorRead:
    """The operator's summary with how many of its cases each mode judged."""
    return OperatorRead.model_validate(operator).model_copy(update={"coverage": CaseCoverage(
        cases=cov.total, sim=cov.sim, graph=cov.graph, npu=cov.npu)})


@router.get("/{name}", response_model=OperatorDetail, summary="An operator's cases across SIM and NPU",
            responses={404: {"model": ErrorRead}})
@read_only
def read_operator(name: str, caller: ReadCaller, session: SessionDep) -> OperatorDetail:
    """The summary, and each case's combined verdict with its latest SIM and NPU results."""
    operator = queries.get_operator(session, name)
    cases = [OperatorCase(case=c["case"], combined_verdict=c["combined_verdict"], reason=c["reason"],
                          sim=CaseResultBrief.model_validate(c["sim"]) if c["sim"] else None,
                          npu=CaseResultBrief.model_validate(c["npu"]) if c["npu"] else None)
             for c in queries.operator_cases(session, operator.id)]
    return OperatorDetail(operator=_read(operator, coverage.for_operators(session, [operator.id])[operator.id]),
                          cases=cases)


@router.get("/{name}/history", response_model=OperatorHistory, summary="Diffs and cost over an operator's runs",
            responses={404: {"model": ErrorRead}, 400: {"model": ErrorRead}})
def read_history(
    name: str, caller: ReadCaller, session: SessionDep, mode: Mode | None = None,
    limit: Annotated[int | None, Query(ge=1, le=history.MAX_RUNS,
                                       description=f"runs (default {history.DEFAULT_RUNS}; "
                                                   "with since/until, the whole range up to the maximum)")] = None,
    since: datetime | None = None, until: datetime | None = None,
    cursor: Annotated[int | None, Query(description="next_cursor of the previous page: older runs")] = None,
    buckets: Annotated[int | None, Query(ge=2, le=history.MAX_BUCKETS,
                                         description="downsample each mode to this many min/max points")] = None,
    case: Annotated[str | None, Query(min_length=1, max_length=200,
                                      description="one case: its own values instead of the worst over the run's "
                                                  "cases, only runs that stored it; 404 if the operator has no "
                                                  "such case")] = None,
) -> OperatorHistory:
    """Per run by date, oldest first: max |diff| (SIM raw), graph-verify diff, NPU diff with atol/rtol, cost model.

    Each value is the worst (max) over the run's cases, or with `case` that case's own value (then
    `cases` is 1 and `days`, which are per operator, stay empty). An unknown case answers 404 naming it."""
    operator = queries.get_operator(session, name)
    window = history.Window(mode=mode, limit=limit, since=as_utc(since) if since else None,
                            until=as_utc(until) if until else None, cursor=cursor, buckets=buckets, case=case)
    found = history.operator_history(session, operator.id, window)
    return OperatorHistory(operator=operator.name, points=[HistoryPoint(**p) for p in found.points],
                           next_cursor=found.next_cursor, days=[HistoryDay.model_validate(d) for d in found.days])
