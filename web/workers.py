"""Workers: who is online, what they can do, queue depths, per-card health of NPU workers."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from jobqueue import QUEUES
from server.api.deps import SessionDep, SettingsDep
from server.auth import Caller, require
from server.services import queries, workers
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
Admin = Annotated[Caller, Depends(require("admin"))]


@router.get("/workers", response_class=HTMLResponse, name="workers")
def workers_page(request: Request, session: SessionDep, settings: SettingsDep, caller: Reader) -> HTMLResponse:
    rows: list[dict[str, Any]] = [{"w": w, "online": workers.is_online(w, settings.job_heartbeat_s), "caps": w.capabilities or {}}
            for w in queries.list_workers(session)]
    depths = queries.queue_depths(session)
    return render(request, "workers.html", caller, rows=rows, can_release=caller.allows("admin"),
                  online=sum(1 for r in rows if r["online"]),
                  depths={q: depths.get(q, {"queued": 0, "awaiting_npu": 0, "running": 0}) for q in (*QUEUES, *sorted(set(depths) - set(QUEUES)))},
                  npu_rows=[r for r in rows if "npu" in (r["caps"].get("modes") or r["w"].queues or [])])


@router.post("/workers/{name}/cards/{card}/release", name="card_release")
def release_card(name: str, card: int, session: SessionDep, caller: Admin) -> RedirectResponse:
    """The Workers page's Release button (like POST /api/v1/workers/{name}/cards/{card}/release)."""
    workers.release_card(session, name, card)
    return RedirectResponse("/workers", status_code=303)
