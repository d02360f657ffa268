"""Case results across jobs: filters and keyset pagination."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from runtime.modes import Mode
from runtime.verdicts import VERDICTS
from server.api.deps import SessionDep, read_only
from server.auth import ReadCaller
from server.schemas.case import CaseList, CaseRead
from server.schemas.common import as_utc
from server.services import queries

router = APIRouter(prefix="/cases", tags=["cases"])
CaseVerdict = Literal[VERDICTS]  # type: ignore[valid-type]


@router.get("", response_model=CaseList, summary="Case results, newest first")
@read_only
def list_cases(
    caller: ReadCaller, session: SessionDep,
    verdict: Annotated[list[CaseVerdict], Query(description="per-mode verdict (repeatable)")] = [],  # noqa: B006
    mode: Mode | None = None, operator: str | None = None, branch: str | None = None,
    author: str | None = None, commit: str | None = None, since: datetime | None = None,
    until: datetime | None = None, job_id: int | None = None,
    cursor: Annotated[int | None, Query(ge=1, description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=queries.MAX_PAGE)] = 100,
) -> CaseList:
    """One page of case results; follow next_cursor for older ones."""
    f = queries.CaseFilter(verdict=list(verdict), mode=mode, operator=operator, branch=branch, author=author,
                           commit=commit, since=as_utc(since) if since else None,
                           until=as_utc(until) if until else None, job_id=job_id)
    rows, next_cursor = queries.list_cases(session, f, cursor, limit)
    return CaseList(items=[CaseRead.model_validate(r) for r in rows], next_cursor=next_cursor)
