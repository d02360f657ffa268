"""POST /submissions (multipart upload or JSON files) and GET /submissions/{id}."""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response, status
from fastapi.responses import FileResponse
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy import select
from starlette.datastructures import FormData

from runtime.modes import MODES
from server.api.deps import BlobsDep, ProducerDep, SessionDep, SettingsDep, enqueue_after_commit, get_settings
from server.auth import ReadCaller, SubmitCaller
from server.config import Settings
from server.errors import InvalidInput, NotFound, PayloadTooLarge
from server.models import Job, Submission
from server.schemas.common import ErrorRead
from server.schemas.submission import JobBrief, SubmissionAccepted, SubmissionCreate, SubmissionRead
from server.services import submissions

router = APIRouter(prefix="/submissions", tags=["submissions"])

FORM_OVERHEAD_BYTES = 64 * 1024  # multipart boundaries and the small text fields
MAX_FIELD_BYTES = 64 * 1024


def _listish(values: list[str]) -> list[str]:
    """Repeatable fields that may also be comma separated: ?modes=sim&modes=npu or modes=sim,npu."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _too_large(settings: Settings, size: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"upload is {size} bytes; the limit is {settings.max_upload_bytes}")


def _body_limit(settings: Settings, ctype: str) -> int:
    """JSON escapes the files' text (quotes, newlines), so it gets room to spare; the bundle is checked later."""
    factor = 2 if ctype.startswith("application/json") else 1
    return factor * settings.max_upload_bytes + FORM_OVERHEAD_BYTES


async def _from_json(request: Request, settings: Settings) -> submissions.NewSubmission:
    body = await request.body()
    if len(body) > _body_limit(settings, "application/json"):
        raise _too_large(settings, len(body))
    try:
        payload = SubmissionCreate.model_validate_json(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors, body=None) from None
    name = payload.operator_name
    filename, data = f"{name or 'submission'}.zip", submissions.bundle_from_files(payload.files)  # checks names
    only = next(iter(payload.files)) if len(payload.files) == 1 else ""
    if only.endswith(".py"):
        filename, data = PurePosixPath(only).name, payload.files[only].encode()  # a single script
    return submissions.NewSubmission(filename=filename, data=data, modes=list(payload.modes), operator=name,
                                     cases=payload.cases, labels=payload.labels.model_dump(exclude_none=True),
                                     suite_run_id=payload.suite_run_id, pypto=payload.pypto)


async def _from_form(request: Request, settings: Settings) -> submissions.NewSubmission:
    async with request.form(max_files=1, max_fields=100, max_part_size=MAX_FIELD_BYTES) as form:
        return await _read_form(form, settings)


async def _read_form(form: FormData, settings: Settings) -> submissions.NewSubmission:
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise InvalidInput("multipart field 'file' (the package or script) is missing")
    data = await upload.read(settings.max_upload_bytes + 1)
    if len(data) > settings.max_upload_bytes:
        raise _too_large(settings, upload.size or len(data))
    text = {k: v for k, v in form.multi_items() if isinstance(v, str)}
    names = {text.get("operator"), text.get("name")} - {None, ""}
    if len(names) > 1:
        raise InvalidInput("give 'name' or 'operator', not two different names")
    raw_suite = text.get("suite_run_id") or None
    if raw_suite is not None and not raw_suite.strip().isdigit():
        raise InvalidInput(f"suite_run_id must be an integer, got {raw_suite!r}")
    labels = {k: text[k] for k in ("branch", "commit", "author") if text.get(k)}
    return submissions.NewSubmission(
        filename=upload.filename or "submission", data=data, operator=names.pop() if names else None,
        modes=_listish([str(v) for v in form.getlist("modes")]) or ["sim"],
        cases=_listish([str(v) for v in form.getlist("cases")]), labels=labels,
        suite_run_id=int(raw_suite) if raw_suite else None, pypto=text.get("pypto") or None)


async def parse_submission(request: Request,
                           settings: Annotated[Settings, Depends(get_settings)]) -> submissions.NewSubmission:
    """Parse either body form into a NewSubmission, refusing oversize uploads early."""
    ctype = request.headers.get("content-type", "").lower()
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > _body_limit(settings, ctype):
        raise _too_large(settings, int(length))
    if ctype.startswith("application/json"):
        return await _from_json(request, settings)
    if ctype.startswith("multipart/form-data"):
        return await _from_form(request, settings)
    raise InvalidInput("send multipart/form-data (field 'file') or application/json ('files')")


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
    },
}
OPENAPI_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": MULTIPART_SCHEMA},
    "application/json": {"schema": {"$ref": "#/components/schemas/SubmissionCreate"}},
}}}


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=SubmissionAccepted,
             summary="Submit an operator package or script",
             responses={200: {"model": SubmissionAccepted, "description": "an Idempotency-Key replay"},
                        409: {"model": ErrorRead}, 413: {"model": ErrorRead}, 422: {"model": ErrorRead}},
             openapi_extra=OPENAPI_BODY)
def create_submission(
    caller: SubmitCaller, session: SessionDep, settings: SettingsDep, blobs: BlobsDep, producer: ProducerDep,
    response: Response,
    new: Annotated[submissions.NewSubmission, Depends(parse_submission)],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)] = None,
) -> SubmissionAccepted:
    """Validate and store the bundle, create one job per mode, and enqueue them after commit."""
    new.idempotency_key, new.submitted_by = idempotency_key or None, caller.name
    sub, jobs, created = submissions.create_once(session, blobs, settings, new)
    if created:
        for job in jobs:
            enqueue_after_commit(session, producer, job)
    else:
        response.status_code = status.HTTP_200_OK
    return SubmissionAccepted(submission_id=sub.id, jobs=[JobBrief.model_validate(j) for j in jobs])


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
            responses={200: {"content": {"application/octet-stream": {}}}, 404: {"model": ErrorRead}})
def download_submission_bundle(submission_id: int, caller: ReadCaller, session: SessionDep,
                               blobs: BlobsDep) -> FileResponse:
    """The bundle exactly as stored, so that a reader can rerun it with `crosscheck run`."""
    sub = session.get(Submission, submission_id)
    if sub is None or not blobs.path(sub.blob_path).is_file():
        raise NotFound(f"no stored bundle for submission {submission_id}")
    return FileResponse(blobs.path(sub.blob_path), media_type="application/octet-stream",
                        filename=PurePosixPath(sub.filename).name)
