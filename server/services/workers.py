"""Workers' heartbeats: upsert the row, and who counts as online."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy.orm import Session

from server.models import Worker
from server.models.base import utcnow

ONLINE_HEARTBEATS = 3  # a worker is online while its last heartbeat is younger than this many periods


def heartbeat(session: Session, name: str, host: str, queues: list[str], capabilities: dict[str, Any],
              current_job_id: int | None, jobs_done: int | None = None) -> Worker:
    """Record that a worker is alive, what it serves and what it runs now."""
    worker = session.get(Worker, name)
    now = utcnow()
    if worker is None:
        worker = Worker(name=name, started_at=now, jobs_done=0)
        session.add(worker)
    worker.host, worker.queues, worker.capabilities = host, list(queues), dict(capabilities)
    worker.current_job_id = current_job_id
    worker.last_heartbeat = now
    if jobs_done is not None:
        worker.jobs_done = jobs_done
    session.flush()
    return worker


def is_online(worker: Worker, heartbeat_s: float, now: datetime | None = None) -> bool:
    now = now or utcnow()
    last = worker.last_heartbeat if worker.last_heartbeat.tzinfo else worker.last_heartbeat.replace(tzinfo=timezone.utc)
    return now - last <= timedelta(seconds=ONLINE_HEARTBEATS * heartbeat_s)
