"""The job lifecycle: claim (compare-and-set), heartbeat, progress, cancel, retry, stale sweep."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from server.errors import Conflict, NotFound, PermissionDenied
from server.models import Job
from server.models.base import utcnow
from server.models.job import CANCELLED, ERROR, FINISHED, QUEUED, RUNNING, WAITING


def get(session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    return job


def claim(session: Session, job_id: int, worker: str, attempt: int, token_id: int | None = None) -> bool:
    """queued (or awaiting_npu) -> running for this attempt, atomically. False when someone else has it (or it was
    cancelled): guards acks_late redelivery and duplicate deliveries."""
    now = utcnow()
    result = session.execute(
        update(Job).where(Job.id == job_id, Job.status.in_(WAITING), Job.attempts == attempt)
        .values(status=RUNNING, worker=worker, claim_token_id=token_id, started_at=now, heartbeat_at=now,
                progress={}, awaiting_since=None)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def claim_job(session: Session, job_id: int, worker: str, attempt: int, token_id: int | None = None) -> Job:
    """claim(), answering Conflict (with the job's state) when the job is not claimable."""
    job = get(session, job_id)
    if not claim(session, job_id, worker, attempt, token_id):
        raise Conflict(f"job {job_id} attempt {attempt} is not claimable: the job is {job.status} "
                       f"at attempt {job.attempts}")
    session.refresh(job)  # claim() updated the row behind the identity map's back
    return job


def running_attempt(session: Session, job_id: int, attempt: int) -> Job:
    """The job, if `attempt` is its current running attempt; Conflict for a lost or stale worker."""
    job = get(session, job_id)
    if job.status != RUNNING or job.attempts != attempt:
        raise Conflict(f"job {job_id} attempt {attempt} is not running: the job is {job.status} "
                       f"at attempt {job.attempts}")
    return job


def check_claimant(job: Job, attempt: int, token_id: int | None) -> None:
    """Only the token that claimed a job's running attempt may act for it (bundle, heartbeat, result).

    Defence in depth: a worker token that leaked (or another tenant's worker) cannot fetch the
    bundle of, keep alive or post the result for a job some other worker claimed.
    """
    if job.status == RUNNING and job.attempts == attempt and job.claim_token_id not in (None, token_id):
        raise PermissionDenied(f"job {job.id} attempt {attempt} was claimed by another worker's token")


def heartbeat(session: Session, job: Job, progress: dict[str, Any] | None) -> bool:
    """Record liveness and progress; returns True when a cancel was requested."""
    job.heartbeat_at = utcnow()
    if progress is not None:
        job.progress = progress
    return job.cancel_requested


def cancel(session: Session, job: Job) -> Job:
    if job.status in FINISHED:
        raise Conflict(f"job {job.id} already finished ({job.status})")
    if job.status in WAITING:
        job.status = CANCELLED
        job.finished_at = utcnow()
    else:
        job.cancel_requested = True  # the worker stops between cases and reports cancelled
    return job


UPLOAD_QUEUE = "upload"  # jobs that hold uploaded results (server/services/ingest.py): nothing to run


def retry(session: Session, job: Job) -> Job:
    if job.queue == UPLOAD_QUEUE:
        raise Conflict(f"job {job.id} holds uploaded results; upload them again instead of retrying")
    if job.status not in FINISHED:
        raise Conflict(f"job {job.id} is {job.status}; only finished jobs can be retried")
    job.attempts += 1
    job.status = QUEUED
    job.cancel_requested = False
    job.error = None
    job.worker = job.claim_token_id = None
    job.started_at = job.finished_at = job.heartbeat_at = None
    job.queued_at = utcnow()
    job.awaiting_since = None
    job.progress = {}
    return job


def finish(job: Job, status: str, error: str | None = None) -> None:
    job.status = status
    job.error = error
    job.finished_at = utcnow()
    if job.started_at is not None:
        start = job.started_at if job.started_at.tzinfo else job.started_at.replace(tzinfo=job.finished_at.tzinfo)
        job.duration_s = (job.finished_at - start).total_seconds()


def queue_position(session: Session, job: Job) -> int | None:
    """1-based position among waiting jobs (queued or awaiting_npu) of the same queue, or None."""
    if job.status not in WAITING:
        return None
    ahead = session.scalar(select(func.count()).select_from(Job).where(
        Job.queue == job.queue, Job.status.in_(WAITING), Job.queued_at < job.queued_at))
    return int(ahead or 0) + 1


def queue_positions(session: Session, listed: list[Job]) -> dict[int, int]:
    """queue_position() of each waiting job in `listed`, in one query (a jobs page asked one per job). Jobs queued
    after the page's last waiting one cannot change its positions, so they are not ranked."""
    waiting = [j for j in listed if j.status in WAITING]
    if not waiting:
        return {}
    pos = func.rank().over(partition_by=Job.queue, order_by=Job.queued_at).label("pos")
    ranked = (select(Job.id, pos).where(Job.status.in_(WAITING), Job.queue.in_({j.queue for j in waiting}),
                                        Job.queued_at <= max(j.queued_at for j in waiting))
              .subquery())
    rows = session.execute(select(ranked.c.id, ranked.c.pos).where(ranked.c.id.in_([j.id for j in waiting])))
    return {int(job_id): int(p) for job_id, p in rows}


def stale_jobs(session: Session, stale_s: float) -> list[Job]:
    """Running jobs whose worker stopped sending heartbeats (it died, or the broker lost it)."""
    limit = utcnow() - timedelta(seconds=stale_s)
    return list(session.scalars(select(Job).where(Job.status == RUNNING, Job.heartbeat_at < limit)))


REQUEUED, GAVE_UP = "requeued", "gave_up"


def requeue_or_fail(session: Session, job: Job, stale_s: float, max_attempts: int) -> str | None:
    """A lost job goes back to the queue as a new attempt (REQUEUED: enqueue it), or fails after
    max_attempts (GAVE_UP).

    A compare-and-set, like claim(): the row changes only while it is still this running attempt
    with an expired heartbeat. Every API process runs a sweeper; when two race for the same job,
    the second finds the row changed and gets None, so the job is re-queued (and sent) once.
    """
    now = utcnow()
    guard = (Job.id == job.id, Job.status == RUNNING, Job.attempts == job.attempts,
             Job.heartbeat_at < now - timedelta(seconds=stale_s))
    if job.attempts >= max_attempts:
        outcome = GAVE_UP
        values: dict[str, Any] = {"status": ERROR, "finished_at": now,
                                  "error": f"worker lost {job.attempts} time(s) (no heartbeat); giving up"}
        if job.started_at is not None:
            start = job.started_at if job.started_at.tzinfo else job.started_at.replace(tzinfo=now.tzinfo)
            values["duration_s"] = (now - start).total_seconds()
    else:
        outcome = REQUEUED
        values = {"status": QUEUED, "attempts": job.attempts + 1, "worker": None, "claim_token_id": None,
                  "queued_at": now, "error": f"re-queued: worker lost during attempt {job.attempts}"}
    result = session.execute(update(Job).where(*guard).values(**values).execution_options(synchronize_session=False))
    if result.rowcount != 1:
        return None  # another sweeper got there first, or the worker's heartbeat came back
    session.refresh(job)  # the update went behind the identity map's back
    return outcome


def queued_jobs(session: Session, older_than_s: float) -> list[Job]:
    """Queued jobs that no worker has claimed for a while (their message may be lost)."""
    limit = utcnow() - timedelta(seconds=older_than_s)
    return list(session.scalars(select(Job).where(Job.status == QUEUED, Job.queued_at < limit)))
