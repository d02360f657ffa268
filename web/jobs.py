"""The job page: stages, metrics and verdicts, diagnosis cards, lint, logs, the cost-model timeline."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from server.api.deps import BlobsDep, SessionDep, SettingsDep
from server.services import workers
from web import jobpage
from web.deps import Reader, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
REFRESH_S = 5  # the no-JavaScript page reloads this often while its job runs


@router.get("/jobs/{job_id}", response_class=HTMLResponse, name="job")
def job_page(request: Request, job_id: int, session: SessionDep, blobs: BlobsDep, settings: SettingsDep,
             caller: Reader) -> HTMLResponse:
    view = jobpage.build(session, blobs, job_id)
    mode = view["job"].mode
    serving = workers.serving(session, settings.job_heartbeat_s, (mode,))[mode] if not view["finished"] else None
    sub = view["sub"]  # a bundle is its submitter's source: the API lets only them (or an admin) download it
    can_download = sub is not None and (caller.allows("admin") or (sub.token_id is not None
                                                                   and sub.token_id == caller.token_id))
    return render(request, "job.html", caller, refresh_s=REFRESH_S, unserved=serving if serving and not
                  serving["online"] else None, can_download=can_download, **view)
