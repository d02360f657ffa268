"""The job outbox (docs/platform.md §3): a waiting job's message is owed to the broker until it accepted one.

A job created, retried or re-queued in a transaction is in the outbox from its commit on: its current
attempt is not yet `dispatched_attempt`. The request sends it right after the commit and marks it sent; what
that send missed (the broker was down, the process died) the relay (server/relay.py) sends within seconds.
"""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from server.models import Job
from server.models.base import utcnow
from server.models.job import WAITING

BATCH = 200  # jobs sent per relay pass


def owed() -> object:
    """The condition: a waiting job whose current attempt has no accepted message."""
    return Job.status.in_(WAITING) & or_(Job.dispatched_attempt.is_(None), Job.dispatched_attempt != Job.attempts)


def pending(session: Session, older_than_s: float, limit: int = BATCH) -> list[Job]:
    """Owed jobs queued more than older_than_s ago (younger ones are their request's to send), oldest first.
    Locked on PostgreSQL, skipping rows another API process's relay holds, so each is sent once."""
    since = utcnow() - timedelta(seconds=older_than_s)
    query = (select(Job).where(owed(), Job.queued_at < since).order_by(Job.queued_at, Job.id).limit(limit)
             .with_for_update(skip_locked=True))
    return list(session.scalars(query))


def mark_sent(session: Session, job_id: int, attempt: int) -> None:
    """The broker accepted the message of this attempt (a compare-and-set: a newer attempt stays owed)."""
    session.execute(update(Job).where(Job.id == job_id, Job.attempts == attempt)
                    .values(dispatched_attempt=attempt, dispatched_at=utcnow())
                    .execution_options(synchronize_session=False))


def unclaimed(session: Session, older_than_s: float) -> list[Job]:
    """Waiting jobs sent more than older_than_s ago and still not claimed: their message may be lost."""
    since = utcnow() - timedelta(seconds=older_than_s)
    return list(session.scalars(select(Job).where(Job.status.in_(WAITING), Job.dispatched_attempt == Job.attempts,
                                                  Job.dispatched_at < since)))


def owe(session: Session, job_ids: list[int]) -> None:
    """These jobs are owed a message again (the relay sends them)."""
    if job_ids:
        session.execute(update(Job).where(Job.id.in_(job_ids)).values(dispatched_attempt=None)
                        .execution_options(synchronize_session=False))


def forget_sent(session: Session) -> int:
    """The broker lost its messages (restarted empty): every waiting job is owed again; how many."""
    result = session.execute(update(Job).where(Job.status.in_(WAITING), Job.dispatched_attempt.is_not(None))
                             .values(dispatched_attempt=None).execution_options(synchronize_session=False))
    return int(result.rowcount or 0)
