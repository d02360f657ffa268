"""Jobs: status, report, logs, artifacts; cancel and retry."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import BlobsDep, ProducerDep, SessionDep, enqueue_after_commit, read_only
from server.auth import ReadCaller, SubmitCaller
from server.errors import NotFound
from server.models import Job, Operator
from server.schemas.common import ErrorRead
from server.schemas.job import ArtifactList, ArtifactRead, CaseLogs, JobList, JobLogs, JobRead, JobTimings
from server.services import artifacts, audit, jobs, ownership, queries

router = APIRouter(prefix="/jobs", tags=["jobs"])
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorRead}}
CONFLICT: dict[int | str, dict[str, Any]] = {403: {"model": ErrorRead}, 404: {"model": ErrorRead},
                                             409: {"model": ErrorRead}}


def job_read(session: Session, job: Job, positions: dict[int, int] | None = None,
             operator: str | None = None) -> JobRead:
    """A job as the API shows it: its queue position while queued and its operator's name (from `positions` and
    `operator` when the caller read them for a whole page)."""
    if operator is None:
        known = session.get(Operator, job.operator_id)
        operator = known.name if known else ""
    timings = JobTimings(created_at=job.created_at, queued_at=job.queued_at, started_at=job.started_at,
                         finished_at=job.finished_at, duration_s=job.duration_s)
    return JobRead(id=job.id, submission_id=job.submission_id, operator=operator,
                   mode=job.mode, queue=job.queue, status=job.status, attempts=job.attempts,
                   queue_position=(jobs.queue_position(session, job) if positions is None
                                   else positions.get(job.id)), worker=job.worker,
                   env_fingerprint=job.env_fingerprint, progress=job.progress, summary=job.summary,
                   case_count=job.case_count, timeout_s=job.timeout_s, cancel_requested=job.cancel_requested,
                   error=job.error, submitted_by=job.submitted_by, timings=timings)


@router.get("", response_model=JobList, summary="Recent jobs, newest first")
@read_only
def list_jobs(caller: ReadCaller, session: SessionDep, operator: str | None = None,
              limit: Annotated[int, Query(ge=1, le=500)] = 50,
              before: Annotated[int | None, Query(description="only jobs with a smaller id: the last id of the "
                                                              "previous page")] = None) -> JobList:
    """The latest jobs, optionally of one operator, a page at a time; the same few queries however many jobs
    there are (docs/platform.md §5)."""
    operator_id = queries.get_operator(session, operator).id if operator else None
    page = queries.job_page(session, limit, operator_id, before)
    positions = jobs.queue_positions(session, [job for job, _ in page])
    return JobList(items=[job_read(session, job, positions, name) for job, name in page])


@router.get("/{job_id}", response_model=JobRead, summary="A job's status, progress and timings", responses=NOT_FOUND)
@read_only
def read_job(job_id: int, caller: ReadCaller, session: SessionDep) -> JobRead:
    """Status, attempts, queue position, worker, progress, summary and timings."""
    return job_read(session, jobs.get(session, job_id))


@router.get("/{job_id}/report", summary="The runtime's JSON report", responses=NOT_FOUND,
            response_class=Response, openapi_extra={"responses": {"200": {"content": {"application/json": {}}}}})
def read_report(job_id: int, caller: ReadCaller, session: SessionDep, blobs: BlobsDep) -> Response:
    """The report exactly as the worker sent it; 404 until the job has one."""
    job = jobs.get(session, job_id)
    if not job.report_path:
        raise NotFound(f"job {job_id} has no report yet ({job.status})")
    return Response(blobs.read(job.report_path), media_type="application/json")


@router.get("/{job_id}/logs", response_model=JobLogs, summary="Per-case stdout, stderr and plog tails",
            responses=NOT_FOUND)
def read_logs(job_id: int, caller: ReadCaller, session: SessionDep, blobs: BlobsDep) -> JobLogs:
    """Log tails from the report, and the paths of the job's artifact files."""
    jobs.get(session, job_id)
    return JobLogs(job_id=job_id, cases=[CaseLogs(**c) for c in artifacts.case_logs(session, job_id)],
                   artifacts=[path for path, _ in artifacts.listing(blobs, job_id)])


@router.get("/{job_id}/artifacts", response_model=ArtifactList, summary="A job's files", responses=NOT_FOUND)
def list_artifacts(job_id: int, caller: ReadCaller, session: SessionDep, blobs: BlobsDep) -> ArtifactList:
    """Reports and artifacts of every attempt, as paths under the job's folder."""
    jobs.get(session, job_id)
    items = [ArtifactRead(path=p, size_bytes=n) for p, n in artifacts.listing(blobs, job_id)]
    return ArtifactList(job_id=job_id, items=items)


@router.get("/{job_id}/artifacts/{path:path}", summary="Download one artifact file", response_class=FileResponse,
            responses={**NOT_FOUND, 422: {"model": ErrorRead}})
def download_artifact(job_id: int, path: str, caller: ReadCaller, session: SessionDep, blobs: BlobsDep) -> FileResponse:
    """One file; paths that leave the job's folder are refused."""
    jobs.get(session, job_id)
    file = blobs.artifact_path(job_id, path)
    return FileResponse(file, filename=file.name, media_type="application/octet-stream")


@router.post("/{job_id}/cancel", response_model=JobRead, summary="Cancel a job", responses=CONFLICT)
def cancel_job(job_id: int, caller: SubmitCaller, session: SessionDep) -> JobRead:
    """A queued job is cancelled at once; a running one within seconds. Only its submitter's token or an admin."""
    job = jobs.get(session, job_id)
    ownership.check_job(session, job, caller.token_id, caller.name, caller.allows("admin"))
    job = jobs.cancel(session, job)
    audit.record(session, caller.name, audit.CANCEL, f"job {job_id}", caller.token_id)
    return job_read(session, job)


@router.post("/{job_id}/retry", response_model=JobRead, summary="Run a finished job again", responses=CONFLICT)
def retry_job(job_id: int, caller: SubmitCaller, session: SessionDep, producer: ProducerDep) -> JobRead:
    """A new attempt of a finished job, enqueued after commit. Only its submitter's token or an admin."""
    job = jobs.get(session, job_id)
    ownership.check_job(session, job, caller.token_id, caller.name, caller.allows("admin"))
    job = jobs.retry(session, job)
    audit.record(session, caller.name, audit.RETRY, f"job {job_id}", caller.token_id, attempt=job.attempts)
    enqueue_after_commit(session, producer, job)
    return job_read(session, job)
