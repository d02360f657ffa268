"""Submit: upload a package or .py and watch it run. A plain form POST works without JavaScript."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from runtime.modes import MODES
from server.api.deps import (
    BlobsDep,
    NewSubmissionDep,
    ProducerDep,
    SessionDep,
    SettingsDep,
    enqueue_after_commit,
)
from server.services import submissions, workers
from web.deps import Submitter, render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)


@router.get("/submit", response_class=HTMLResponse, name="submit")
def submit_form(request: Request, caller: Submitter, settings: SettingsDep, session: SessionDep,
                mode: str = "") -> HTMLResponse:
    """?mode=npu: the NPU box ticked (the operator page links here when SIM could not decide)."""
    serving = workers.serving(session, settings.job_heartbeat_s, tuple(MODES))
    return render(request, "submit.html", caller, modes=MODES, checked=mode if mode in MODES else "sim",
                  max_upload_mb=settings.max_upload_bytes / 1024 / 1024,
                  unserved={m: s for m, s in serving.items() if not s["online"]})


@router.post("/submit", name="submit_post")
def submit(caller: Submitter, session: SessionDep, settings: SettingsDep, blobs: BlobsDep, producer: ProducerDep,
           new: NewSubmissionDep) -> RedirectResponse:
    """The same parsing (server/services/submission_body.py) and service as POST /api/v1/submissions;
    then to the first job's page.

    Cookie auth on a form POST: the crosscheck_token cookie is SameSite=Lax, so another site's
    form cannot make the browser send it (no cross-site request forgery of submissions).
    """
    new.submitted_by, new.token_id = caller.name, caller.token_id
    new.interactive = True  # someone is looking at the page it leads to (docs/platform.md §4)
    _sub, jobs, created = submissions.create(session, blobs, settings, new)
    if created:
        for job in jobs:
            enqueue_after_commit(session, producer, job)
    return RedirectResponse(f"/jobs/{jobs[0].id}", status_code=303)
