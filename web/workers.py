"""Workers: who is online, what they can do, queue depths, per-card health of NPU workers."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from jobqueue import QUEUES
from server.api.deps import SessionDep, SettingsDep
from server.auth import Caller, require
from server.services import audit, queries, workers
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
Admin = Annotated[Caller, Depends(require("admin"))]


@router.get("/workers", response_class=HTMLResponse, name="workers")
def workers_page(request: Request, session: SessionDep, settings: SettingsDep, caller: Reader) -> HTMLResponse:
    rows: list[dict[str, Any]] = [{"w": w, "online": workers.is_online(w, settings.job_heartbeat_s), "caps": w.capabilities or {}}
            for w in queries.list_workers(session)]
    depths = queries.queue_depths(session)
    serving = workers.serving(session, settings.job_heartbeat_s, QUEUES)
    return render(request, "workers.html", caller, rows=rows, can_release=caller.allows("admin"),
                  unserved={m: s for m, s in serving.items() if not s["online"]},
                  online=sum(1 for r in rows if r["online"]),
                  depths={q: depths.get(q, {"queued": 0, "awaiting_npu": 0, "running": 0}) for q in (*QUEUES, *sorted(set(depths) - set(QUEUES)))},
                  npu_rows=[r for r in rows if "npu" in (r["caps"].get("modes") or r["w"].queues or [])])


@router.post("/workers/{name}/cards/{card}/release", name="card_release")
def release_card(name: str, card: int, session: SessionDep, caller: Admin) -> RedirectResponse:
    """The Workers page's Release button (like POST /api/v1/workers/{name}/cards/{card}/release)."""
    workers.release_card(session, name, card)
    audit.record(session, caller.name, audit.CARD_RELEASE, f"worker {name}", caller.token_id, card=card)
    return RedirectResponse("/workers", status_code=303)


@router.post("/workers/{name}/remove", name="worker_remove")
def remove_worker(name: str, session: SessionDep, settings: SettingsDep, caller: Admin) -> RedirectResponse:
    """The Workers page's Remove button for an offline worker (like DELETE /api/v1/workers/{name})."""
    workers.remove(session, name, settings.job_heartbeat_s)
    audit.record(session, caller.name, audit.WORKER_REMOVE, f"worker {name}", caller.token_id)
    return RedirectResponse("/workers", status_code=303)
