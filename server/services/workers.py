"""Workers' heartbeats: upsert the row, who counts as online, and releasing quarantined NPU cards."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.errors import Conflict, NotFound, PermissionDenied
from server.models import ApiToken, Worker
from server.models.base import utcnow

ONLINE_HEARTBEATS = 3  # a worker is online while its last heartbeat is younger than this many periods


def heartbeat(session: Session, name: str, host: str, queues: list[str], capabilities: dict[str, Any],
              current_job_id: int | None, jobs_done: int | None = None, token_id: int | None = None,
              heartbeat_s: float | None = None) -> Worker:
    """Record that a worker is alive, what it serves and what it runs now; the name is bound to the token."""
    worker = session.get(Worker, name)
    now = utcnow()
    if worker is None:
        worker = Worker(name=name, started_at=now, jobs_done=0)
        session.add(worker)
    elif heartbeat_s is not None:
        check_binding(session, worker, token_id, heartbeat_s)
    if token_id is not None:
        worker.token_id = token_id
    worker.host, worker.queues, worker.capabilities = host, list(queues), dict(capabilities)
    worker.current_job_id = current_job_id
    worker.last_heartbeat = now
    if jobs_done is not None:
        worker.jobs_done = jobs_done
    session.flush()
    return worker


def check_binding(session: Session, worker: Worker, token_id: int | None, heartbeat_s: float) -> None:
    """A worker's name belongs to the token that registered it, while that worker is online and its
    token valid: another token cannot pose as it (take over its heartbeats, claim jobs in its name)."""
    if worker.token_id is None or worker.token_id == token_id or not is_online(worker, heartbeat_s):
        return
    bound = session.get(ApiToken, worker.token_id)
    if bound is not None and bound.revoked_at is None:
        raise PermissionDenied(f"worker {worker.name!r} is registered with another token")


def remove(session: Session, name: str, heartbeat_s: float) -> Worker:
    """Forget a stale worker (an admin's clean-up); Conflict while it still sends heartbeats."""
    worker = session.get(Worker, name)
    if worker is None:
        raise NotFound(f"no worker {name!r}")
    if is_online(worker, heartbeat_s):
        raise Conflict(f"worker {name!r} is online (it sent a heartbeat recently); stop it first")
    session.delete(worker)
    session.flush()
    return worker


def is_online(worker: Worker, heartbeat_s: float, now: datetime | None = None) -> bool:
    now = now or utcnow()
    last = worker.last_heartbeat if worker.last_heartbeat.tzinfo else worker.last_heartbeat.replace(tzinfo=timezone.utc)
    return now - last <= timedelta(seconds=ONLINE_HEARTBEATS * heartbeat_s)


def serving(session: Session, heartbeat_s: float, modes: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Per mode: how many online workers serve it and when one was last seen (any state).

    A worker serves a mode it reports among its capabilities' modes (an NPU worker whose cards are
    all quarantined does not), or, without capabilities, a queue it consumes."""
    out: dict[str, dict[str, Any]] = {m: {"online": 0, "last_seen": None} for m in modes}
    for worker in session.scalars(select(Worker)):
        caps = (worker.capabilities or {}).get("modes")
        for mode in modes:
            if mode not in (caps if caps is not None else worker.queues or []):
                continue
            entry = out[mode]
            entry["online"] += int(is_online(worker, heartbeat_s))
            if entry["last_seen"] is None or worker.last_heartbeat > entry["last_seen"]:
                entry["last_seen"] = worker.last_heartbeat
    return out


def release_card(session: Session, name: str, card: int) -> int:
    """Ask the worker to release a quarantined card; the release's number (applied once, at its next
    heartbeat). Conflict when its last heartbeat did not show the card quarantined."""
    worker = session.get(Worker, name)
    if worker is None:
        raise NotFound(f"no worker {name!r}")
    cards = {c.get("device"): c for c in (worker.capabilities or {}).get("cards") or [] if isinstance(c, dict)}
    if card not in cards:
        raise NotFound(f"worker {name!r} reports no NPU card {card}")
    if cards[card].get("state") != "quarantined":
        raise Conflict(f"card {card} of worker {name!r} is not quarantined (it is {cards[card].get('state')})")
    releases = dict(worker.card_releases or {})
    seq = max((int(v) for v in releases.values()), default=0) + 1
    releases[str(card)] = seq
    worker.card_releases = releases  # a new dict: JSON columns track assignment, not mutation
    session.flush()
    return seq
