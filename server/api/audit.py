"""The audit log (scope admin): who did what, and when."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.api.deps import SessionDep
from server.auth import AdminCaller
from server.schemas.audit import AuditEventRead, AuditList
from server.services import audit

router = APIRouter(prefix="/audit", tags=["audit"])
INT64_MAX = 2**63 - 1


@router.get("", response_model=AuditList, summary="The audit log, newest first")
def list_events(caller: AdminCaller, session: SessionDep,
                limit: Annotated[int, Query(ge=1, le=500)] = 100,
                before: Annotated[int | None, Query(ge=1, le=INT64_MAX, description="an id from next_before")] = None,
                action: Annotated[str | None, Query(max_length=32)] = None) -> AuditList:
    """Submissions, cancels, retries, token changes, worker removals and card releases."""
    events = audit.recent(session, limit, before, action)
    more = len(events) == limit
    return AuditList(items=[AuditEventRead.model_validate(e) for e in events],
                     next_before=events[-1].id if more and events else None)
