"""POST /submissions (multipart upload or JSON files) and GET /submissions/{id}."""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Header, Response, status
from fastapi.responses import FileResponse
from sqlalchemy import select

from runtime.modes import MODES
from server.api.deps import BlobsDep, NewSubmissionDep, ProducerDep, SessionDep, SettingsDep, enqueue_after_commit
from server.auth import ReadCaller, SubmitCaller
from server.errors import NotFound, PermissionDenied
from server.models import Job, Submission
from server.schemas.common import ErrorRead
from server.schemas.submission import JobBrief, SubmissionAccepted, SubmissionRead
from server.services import submissions

router = APIRouter(prefix="/submissions", tags=["submissions"])

MULTIPART_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "a .zip/.tar.gz package or a single .py"},
        "operator": {"type": "string"}, "name": {"type": "string", "description": "alias of operator"},
        "modes": {"type": "array", "items": {"type": "string", "enum": list(MODES)},
                  "description": "repeatable or comma separated; default sim"},
        "cases": {"type": "array", "items": {"type": "string"}, "description": "run only these case ids"},
        "branch": {"type": "string"}, "commit": {"type": "string"}, "author": {"type": "string"},
        "suite_run_id": {"type": "integer"},
        "pypto": {"type": "string", "description": "the pypto version the kernel was written for; its jobs go only "
                                                   "to workers with it (docs/versions.md)"},
        "interactive": {"type": "boolean", "description": "someone waits for the result: dispatched before batch "
                                                          "jobs (docs/platform.md §4)"},
    },
}
OPENAPI_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": MULTIPART_SCHEMA},
    "application/json": {"schema": {"$ref": "#/components/schemas/SubmissionCreate"}},
}}}


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=SubmissionAccepted,
             summary="Submit an operator package or script",
             responses={200: {"model": SubmissionAccepted, "description": "an Idempotency-Key replay"},
                        403: {"model": ErrorRead}, 409: {"model": ErrorRead}, 413: {"model": ErrorRead}, 422: {"model": ErrorRead},
                        429: {"model": ErrorRead, "description": "the token's queued cases would pass its quota"}},
             openapi_extra=OPENAPI_BODY)
def create_submission(
    caller: SubmitCaller, session: SessionDep, settings: SettingsDep, blobs: BlobsDep, producer: ProducerDep,
    response: Response,
    new: NewSubmissionDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)] = None,
) -> SubmissionAccepted:
    """Validate and store the bundle, create one job per mode, and enqueue them after commit."""
    new.idempotency_key, new.submitted_by, new.token_id = idempotency_key or None, caller.name, caller.token_id
    new.admin = caller.allows("admin")
    sub, jobs, created = submissions.create_once(session, blobs, settings, new)
    if created:
        for job in jobs:
            if job.id not in new.reused.values():  # an earlier identical job is linked, not run again
                enqueue_after_commit(session, producer, job)
    else:
        response.status_code = status.HTTP_200_OK
    return SubmissionAccepted(submission_id=sub.id, jobs=[JobBrief.model_validate(j) for j in jobs], reused=new.reused)


@router.get("/{submission_id}", response_model=SubmissionRead, summary="A submission and its jobs",
            responses={404: {"model": ErrorRead}})
def read_submission_by_id(submission_id: int, caller: ReadCaller, session: SessionDep) -> SubmissionRead:
    """One submission with the jobs it created."""
    sub = session.get(Submission, submission_id)
    if sub is None:
        raise NotFound(f"no submission {submission_id}")
    jobs = session.scalars(select(Job).where(Job.submission_id == sub.id).order_by(Job.id))
    return SubmissionRead.model_validate(sub).model_copy(update={"jobs": [JobBrief.model_validate(j) for j in jobs]})


@router.get("/{submission_id}/bundle", summary="Download the submitted package or script", response_class=FileResponse,
            responses={200: {"content": {"application/octet-stream": {}}}, 403: {"model": ErrorRead},
                       404: {"model": ErrorRead}})
def download_submission_bundle(submission_id: int, caller: ReadCaller, session: SessionDep,
                               blobs: BlobsDep) -> FileResponse:
    """The bundle exactly as stored, so that its submitter can rerun it with `crosscheck run`.

    A bundle is its submitter's source code: only the token that submitted it, or an admin, may
    download it (verdicts and reports stay readable by every reader)."""
    sub = session.get(Submission, submission_id)
    if sub is None or not blobs.path(sub.blob_path).is_file():
        raise NotFound(f"no stored bundle for submission {submission_id}")
    if not caller.allows("admin") and (sub.token_id is None or sub.token_id != caller.token_id):
        raise PermissionDenied(f"the bundle of submission {submission_id} is its submitter's: only the token "
                               "that submitted it, or an admin, may download it")
    return FileResponse(blobs.path(sub.blob_path), media_type="application/octet-stream",
                        filename=PurePosixPath(sub.filename).name)
