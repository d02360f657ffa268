"""The audit log page (admins): who submitted, cancelled, retried, changed tokens or removed workers."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from server.api.deps import SessionDep
from server.auth import Caller, require
from server.services import audit
from web.deps import render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
PAGE = 100
Admin = Annotated[Caller, Depends(require("admin"))]


@router.get("/audit", response_class=HTMLResponse, name="audit")
def audit_page(request: Request, session: SessionDep, caller: Admin,
               before: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
               action: Annotated[str | None, Query(max_length=32)] = None) -> HTMLResponse:
    events = audit.recent(session, PAGE, before, action or None)
    older = events[-1].id if len(events) == PAGE else None
    return render(request, "audit.html", caller, events=events, older=older, action=action or "",
                  actions=audit.ACTIONS)
