"""Fair dispatch (docs/platform.md §4): which owed jobs the relay sends now, and in what order.

The broker delivers in the order it was given, so a tenant with 80 queued jobs used to delay another's
one job by all 80. Now a job stays waiting in the database until a worker slot for its queue is free (the
online workers' slots, less the jobs running or sent and not yet claimed), and each free slot goes to the
next job in this order: interactive before batch (`priority`), then the tenant (token) with the fewest jobs
running or sent in that queue, then the tenant served longest ago (round-robin), then the oldest job (by id:
a re-queued job keeps its place in its tenant's line). So
another tenant's job waits at most for the jobs already running when it came.
"""
from __future__ import annotations

import heapq
from collections import Counter
from datetime import timedelta

from sqlalchemy import func, or_, select, text
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job, Submission, Worker
from server.models.base import utcnow
from server.models.job import RUNNING, WAITING
from server.services import outbox, workers

DISPATCH_LOCK = 36_036  # a PostgreSQL advisory lock: one API process's relay picks at a time
Tenant = tuple[int | None, str]
Served = dict[tuple[str, Tenant], int]  # (queue, tenant) -> the number of the pick that served it last


def lock(session: Session) -> None:
    """Serialize the picks of several API processes (PostgreSQL); SQLite serializes writers by itself."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": DISPATCH_LOCK})


def worker_slots(session: Session, settings: Settings) -> Counter[str]:
    """Per queue, the job slots of the online workers that consume it (a heartbeat's `slots`, else 1)."""
    slots: Counter[str] = Counter()
    for worker in session.scalars(select(Worker)):
        if workers.is_online(worker, settings.job_heartbeat_s):
            for queue in worker.queues or []:
                slots[str(queue)] += max(1, int((worker.capabilities or {}).get("slots") or 1))
    return slots


def _taken(hold_s: float) -> object:
    """A job that holds a slot: running, or sent within hold_s and not yet claimed."""
    since = utcnow() - timedelta(seconds=hold_s)
    sent = Job.status.in_(WAITING) & (Job.dispatched_attempt == Job.attempts) & (Job.dispatched_at > since)
    return or_(Job.status == RUNNING, sent)


def pick(session: Session, settings: Settings, served: Served) -> list[Job]:
    """The owed jobs to send now, in the order to send them; `served` (the relay's memory) is updated."""
    slots = worker_slots(session, settings)
    if not slots:
        return []
    taken = _taken(settings.dispatch_hold_s)
    tenant_cols = (Submission.token_id, Job.submitted_by)
    rows = session.execute(select(Job.queue, *tenant_cols, func.count()).join(Submission, Submission.id == Job.submission_id)
                           .where(taken, Job.queue.in_(list(slots))).group_by(Job.queue, *tenant_cols))
    loads: dict[str, Counter[Tenant]] = {}
    for queue, token_id, by, n in rows:
        loads.setdefault(queue, Counter())[(token_id, by)] += int(n)
    picked: list[Job] = []
    for queue, total in slots.items():
        free = total - sum(loads.get(queue, Counter()).values())
        if free > 0:
            picked += _fair(session, queue, free, loads.get(queue, Counter()), served)
    return picked


def _fair(session: Session, queue: str, free: int, load: Counter[Tenant], served: Served) -> list[Job]:
    """Up to `free` owed jobs of one queue: interactive first, then the least loaded tenant, then the oldest."""
    rank = func.row_number().over(partition_by=(Submission.token_id, Job.submitted_by),
                                  order_by=(Job.priority.desc(), Job.id)).label("rank")
    ranked = (select(Job.id, rank).join(Submission, Submission.id == Job.submission_id)
              .where(outbox.owed(), Job.queue == queue).subquery())
    ids = list(session.scalars(select(ranked.c.id).where(ranked.c.rank <= free)))
    if not ids:
        return []
    heads: dict[Tenant, list[Job]] = {}
    for job, token_id in session.execute(select(Job, Submission.token_id).join(Submission, Submission.id == Job.submission_id)
                                         .where(Job.id.in_(ids)).order_by(Job.priority.desc(), Job.id)):
        heads.setdefault((token_id, job.submitted_by), []).append(job)
    def key(tenant: Tenant, n: int) -> tuple[int, int, int, int, Tenant]:
        head = heads[tenant][0]
        return -head.priority, n, served.get((queue, tenant), -1), head.id, tenant

    heap = [key(t, load[t]) for t in heads]
    heapq.heapify(heap)
    out: list[Job] = []
    turn = max(served.values(), default=0)
    while heap and len(out) < free:
        _, n, _, _, tenant = heapq.heappop(heap)
        out.append(heads[tenant].pop(0))
        turn += 1
        served[(queue, tenant)] = turn
        if heads[tenant]:
            heapq.heappush(heap, key(tenant, n + 1))
    return out
