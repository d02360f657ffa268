"""What workers call (scope worker): claim, bundle, heartbeat, result.

A worker needs only the broker URL, the API URL and a worker token, never DB credentials.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from server.api.deps import BlobsDep, SessionDep, SettingsDep
from server.auth import WorkerCaller
from server.errors import InvalidInput, NotFound, PermissionDenied
from server.models import Submission, Worker
from server.models.job import RUNNING
from server.schemas.common import ErrorRead
from server.schemas.internal import (
    ClaimCreate,
    ClaimedJob,
    ClaimedSubmission,
    ClaimRead,
    JobHeartbeatCreate,
    JobHeartbeatRead,
    ResultRead,
)
from server.services import artifacts, jobs, workers

router = APIRouter(prefix="/internal/jobs", tags=["internal"])
CONFLICT: dict[int | str, dict[str, Any]] = {404: {"model": ErrorRead}, 409: {"model": ErrorRead}}
MAX_REPORT_BYTES = 64 * 1024 * 1024  # a report with every case's log tails; text fields default to 1 MiB


@router.post("/{job_id}/claim", response_model=ClaimRead, summary="Claim a queued job for one attempt",
             responses=CONFLICT)
def claim_job(job_id: int, body: ClaimCreate, caller: WorkerCaller, session: SessionDep,
              settings: SettingsDep) -> ClaimRead:
    """Compare-and-set queued -> running for this attempt; 409 when someone else has it or it is gone."""
    known = session.get(Worker, body.worker)
    if known is not None:
        workers.check_binding(session, known, caller.token_id, settings.job_heartbeat_s)
    job = jobs.claim_job(session, job_id, body.worker, body.attempt, caller.token_id)
    sub = session.get(Submission, job.submission_id)
    if sub is None:
        raise NotFound(f"job {job_id} has no submission")
    claimed = ClaimedJob(
        id=job.id, mode=job.mode, attempt=job.attempts, timeout_s=job.timeout_s,
        case_timeout_s=settings.case_timeout_s, case_memory_gib=settings.case_memory_gib, operator=sub.operator,
        submission=ClaimedSubmission(id=sub.id, filename=sub.filename, kind=sub.kind,
                                     case_filter=list(sub.case_filter), sha256=sub.bundle_sha256))
    return ClaimRead(claimed=True, job=claimed)


@router.get("/{job_id}/bundle", summary="Download the job's bundle", response_class=FileResponse,
            responses={200: {"content": {"application/octet-stream": {}}}, 403: {"model": ErrorRead},
                       404: {"model": ErrorRead}})
def download_bundle(job_id: int, caller: WorkerCaller, session: SessionDep, blobs: BlobsDep) -> FileResponse:
    """The submitted package or script, byte for byte; its name is in X-Filename. Only for the running
    attempt's claimant (an admin token may read any)."""
    job = jobs.get(session, job_id)
    if not caller.allows("admin") and (job.status != RUNNING or job.claim_token_id not in (None, caller.token_id)):
        raise PermissionDenied(f"job {job_id} is not running under a claim of this token")
    sub = session.get(Submission, job.submission_id)
    if sub is None or not blobs.path(sub.blob_path).is_file():
        raise NotFound(f"the bundle of job {job_id} is missing")
    return FileResponse(blobs.path(sub.blob_path), media_type="application/octet-stream",
                        headers={"X-Filename": sub.filename})


@router.post("/{job_id}/heartbeat", response_model=JobHeartbeatRead, summary="A running job is alive",
             responses=CONFLICT)
def job_heartbeat(job_id: int, body: JobHeartbeatCreate, caller: WorkerCaller, session: SessionDep) -> JobHeartbeatRead:
    """Record liveness and progress; answers whether a cancel was requested."""
    job = jobs.running_attempt(session, job_id, body.attempt)
    jobs.check_claimant(job, body.attempt, caller.token_id)
    return JobHeartbeatRead(cancel_requested=jobs.heartbeat(session, job, body.progress))


@dataclass
class ResultUpload:
    attempt: int
    report: dict[str, Any] | None
    error: str | None
    cancelled: bool
    artifacts: IO[bytes] | None
    timed_out: bool = False


async def parse_result(request: Request) -> AsyncIterator[ResultUpload]:
    """Read the multipart result; `report` may come as a text field or as a file part."""
    async with request.form(max_files=2, max_fields=20, max_part_size=MAX_REPORT_BYTES) as form:
        yield await _read_result(form)  # the form's temp files close after the response


async def _read_result(form: FormData) -> ResultUpload:
    fields = dict(form.multi_items())
    raw_attempt = fields.get("attempt")
    if not isinstance(raw_attempt, str) or not raw_attempt.strip().isdigit() or not 1 <= int(raw_attempt) < 2**63:
        raise InvalidInput(f"'attempt' must be a positive integer, got {raw_attempt!r}")
    report = fields.get("report")
    text = report if isinstance(report, str) or report is None else (await report.read()).decode("utf-8", "replace")
    error = fields.get("error")
    tarball = fields.get("artifacts")
    # Up to 64 MiB of JSON: parsed off the event loop, which serves every read.
    return ResultUpload(attempt=int(raw_attempt), report=await run_in_threadpool(_parse_report, text),
                        error=error if isinstance(error, str) and error else None,
                        cancelled=_flag(fields.get("cancelled")),
                        artifacts=None if tarball is None or isinstance(tarball, str) else tarball.file,
                        timed_out=_flag(fields.get("timed_out")))


def _flag(value: Any) -> bool:
    return str(value or "").lower() in ("1", "true", "yes", "on")


def _parse_report(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"report is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("report is nested too deeply") from None
    if not isinstance(value, dict):
        raise InvalidInput("report must be a JSON object")
    return value


RESULT_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["attempt"],
    "properties": {
        "attempt": {"type": "integer", "minimum": 1},
        "report": {"type": "string", "description": "the runtime's JSON report (text, or a file part)"},
        "error": {"type": "string", "description": "an infrastructure or unusable-input error"},
        "cancelled": {"type": "boolean"},
        "timed_out": {"type": "boolean", "description": "the job ran past its time limit (status timeout)"},
        "artifacts": {"type": "string", "format": "binary", "description": "a .tar.gz of files; no links, no '..'"},
    },
}


@router.post("/{job_id}/result", response_model=ResultRead, summary="Store a job's outcome",
             responses={404: {"model": ErrorRead}, 422: {"model": ErrorRead}},
             openapi_extra={"requestBody": {"required": True,
                                            "content": {"multipart/form-data": {"schema": RESULT_SCHEMA}}}})
def store_result(job_id: int, caller: WorkerCaller, session: SessionDep, blobs: BlobsDep,
                 upload: Annotated[ResultUpload, Depends(parse_result)]) -> ResultRead:
    """Idempotent per job and attempt: a duplicate or stale delivery answers stored=false; 403 when
    another token claimed the running attempt."""
    job = jobs.get(session, job_id)
    jobs.check_claimant(job, upload.attempt, caller.token_id)
    stored = artifacts.store_result(session, blobs, job, upload.attempt, upload.report, upload.error,
                                    upload.cancelled, upload.artifacts, upload.timed_out)
    return ResultRead(stored=stored)
