"""Request dependencies: the session (the one commit point), settings, blobs, the producer, a submission.

The app keeps its settings, sessionmaker, blob store and producer on `app.state` (see
server.main.create_app), so a test app and the real one never share globals.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from server.blobs import BlobStore
from server.config import Settings
from server.db import session_scope
from server.models import Job
from server.queue import Producer
from server.services import outbox, submission_body
from server.services.submissions import NewSubmission

log = logging.getLogger(__name__)
AFTER_COMMIT = "crosscheck.after_commit"
READ_ONLY = "_crosscheck_read_only"
Endpoint = TypeVar("Endpoint", bound=Callable[..., object])


def read_only(endpoint: Endpoint) -> Endpoint:
    """Marks a route that writes nothing of its own: its session runs each statement in autocommit, without the
    BEGIN and COMMIT round trips around them (docs/platform.md §5). The same rows are read (each statement sees
    what was committed when it started, as under READ COMMITTED); the token's throttled last use, one UPDATE,
    still commits. Never for a route with writes that must land together."""
    setattr(endpoint, READ_ONLY, True)
    return endpoint


def get_session(request: Request) -> Iterator[Session]:
    """One session per request, committed BEFORE the response is sent.

    Declared with scope="function" (below): FastAPI runs this teardown right after the endpoint
    and its response serialization, before the response goes out. With the default "request"
    scope the teardown would run after the response was sent (FastAPI >= 0.118), and a failed
    commit would hide behind a 200. A commit error propagates and becomes an error response.
    """
    with session_scope(request.app.state.sessionmaker) as session:
        if getattr(request.scope.get("endpoint"), READ_ONLY, False):
            session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        yield session
    for action in session.info.pop(AFTER_COMMIT, []):
        action()  # e.g. enqueue: only once the rows the message names are visible to workers


def after_commit(session: Session, action: Callable[[], object]) -> None:
    """Run `action` once this request's transaction has committed (never if it rolls back)."""
    session.info.setdefault(AFTER_COMMIT, []).append(action)


def enqueue_after_commit(session: Session, producer: Producer, job: Job) -> None:
    """Send the job's message once the job row is committed (a worker must be able to claim it), and take it
    out of the outbox; a send that fails leaves it owed, for the relay (server/relay.py)."""
    if producer.fair:  # the relay sends it when a worker slot is free, fairly (server/services/dispatch.py)
        after_commit(session, producer.wanted.set)
        return
    job_id, attempt, queue, timeout_s = job.id, job.attempts, job.queue, job.timeout_s
    bind = session.get_bind()

    def send() -> None:
        if not producer.enqueue(job_id, attempt, queue, timeout_s):
            return
        try:
            with Session(bind) as marking, marking.begin():
                outbox.mark_sent(marking, job_id, attempt)
        except Exception:  # committed and sent: the relay sends it once more at worst, never a 500 here
            log.warning("job.mark_sent_failed job_id=%s attempt=%s", job_id, attempt, exc_info=True)

    after_commit(session, send)


# The small dependencies below are `async def`: they do no I/O, and FastAPI runs a plain `def` dependency in its
# thread pool, a hop through a thread for each one on every request (docs/platform.md §5).
async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_blobs(request: Request) -> BlobStore:
    return request.app.state.blobs  # type: ignore[no-any-return]


async def get_producer(request: Request) -> Producer:
    return request.app.state.producer  # type: ignore[no-any-return]


async def get_new_submission(request: Request, settings: Annotated[Settings, Depends(get_settings)]) -> NewSubmission:
    """The submission a request's body carries (multipart upload or JSON files)."""
    return await submission_body.read(request, settings)


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
BlobsDep = Annotated[BlobStore, Depends(get_blobs)]
ProducerDep = Annotated[Producer, Depends(get_producer)]
NewSubmissionDep = Annotated[NewSubmission, Depends(get_new_submission)]
