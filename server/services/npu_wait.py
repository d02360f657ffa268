"""NPU jobs while no NPU worker is online: they wait as awaiting_npu, then expire (docs/npu.md §4).

An NPU worker counts when it is online and reports a usable card (capabilities.modes has "npu";
a worker whose cards are all quarantined does not). A waiting job keeps its broker message and
its queue position: the first NPU worker to come online takes it. One that has waited NPU_WAIT_S
without one ends as `expired`, saying so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job, Worker
from server.models.base import utcnow
from server.models.job import AWAITING_NPU, EXPIRED, QUEUED
from server.services.jobs import finish
from server.services.workers import is_online

NPU = "npu"


@dataclass
class NpuWaitReport:
    awaiting: list[int] = field(default_factory=list)  # queued -> awaiting_npu
    resumed: list[int] = field(default_factory=list)  # awaiting_npu -> queued (a worker came online)
    expired: list[int] = field(default_factory=list)


def npu_workers_online(session: Session, settings: Settings) -> list[str]:
    """Names of the online workers with a usable NPU card."""
    return [w.name for w in session.scalars(select(Worker))
            if is_online(w, settings.job_heartbeat_s) and NPU in ((w.capabilities or {}).get("modes") or [])]


def on_create(session: Session, settings: Settings, jobs: list[Job]) -> None:
    """New NPU jobs start as awaiting_npu when no NPU worker is online."""
    npu_jobs = [j for j in jobs if j.mode == NPU and j.status == QUEUED]
    if npu_jobs and not npu_workers_online(session, settings):
        for job in npu_jobs:
            job.status, job.awaiting_since = AWAITING_NPU, utcnow()


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def sweep(session: Session, settings: Settings) -> NpuWaitReport:
    """Move NPU jobs between queued and awaiting_npu as NPU workers come and go; expire old waits."""
    report, now = NpuWaitReport(), utcnow()
    online = bool(npu_workers_online(session, settings))
    waiting = list(session.scalars(select(Job).where(Job.mode == NPU, Job.status.in_((QUEUED, AWAITING_NPU)))))
    limit = timedelta(seconds=settings.npu_wait_s)
    for job in waiting:
        if job.status == QUEUED and not online:
            job.status, job.awaiting_since = AWAITING_NPU, now
            report.awaiting.append(job.id)
        elif job.status == AWAITING_NPU and online:
            job.status, job.awaiting_since = QUEUED, None
            report.resumed.append(job.id)
        elif job.status == AWAITING_NPU and now - _aware(job.awaiting_since or job.queued_at) > limit:
            finish(job, EXPIRED, f"no NPU worker came online within {_hours(settings.npu_wait_s)}; nothing ran. "
                                 "Start one (crosscheck worker --queues npu) and retry the job.")
            job.awaiting_since = None
            report.expired.append(job.id)
    return report


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"
