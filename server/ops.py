"""Operations endpoints, no token needed: /healthz, /readyz, /metrics (Prometheus)."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Float, case, cast, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from jobqueue import QUEUES
from server.config import Settings
from server.models import Job, Worker
from server.models.base import utcnow
from server.models.job import FINISHED, STATUSES, WAITING
from server.schemas.common import ErrorRead
from server.services import queries
from server.services.workers import ONLINE_HEARTBEATS

log = logging.getLogger(__name__)

router = APIRouter(tags=["operations"])
READY_TIMEOUT_S = 3.0
DURATION_BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600)


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    """Answers as long as the process serves requests; touches neither DB nor broker."""
    return {"status": "ok"}


@router.get("/readyz", summary="The database and the broker are reachable",
            responses={503: {"model": ErrorRead, "description": "a dependency is unreachable"}})
def readyz(request: Request) -> JSONResponse:
    """503 with the reason when the database or the broker does not answer within a few seconds."""
    state = request.app.state
    problems = [p for p in (_check("database", lambda: _ping_db(state.sessionmaker)),
                            _check("broker", state.producer.ping)) if p]
    if problems:
        return JSONResponse({"detail": "; ".join(problems)}, status_code=503)
    return JSONResponse({"status": "ready"})


def _ping_db(maker: sessionmaker[Session]) -> None:
    with maker() as session:
        session.execute(text("SELECT 1"))


def _check(name: str, probe: Any) -> str | None:
    """Run a probe in a thread so a hung connection cannot hold the check past READY_TIMEOUT_S."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"readyz-{name}")
    try:
        pool.submit(probe).result(timeout=READY_TIMEOUT_S)
    except FutureTimeout:
        return f"{name}: no answer within {READY_TIMEOUT_S:g} s"
    except Exception as exc:  # the probe's error is the answer: report it, don't crash the check
        log.warning("readyz.failed dependency=%s error=%s", name, exc)
        return f"{name}: {type(exc).__name__}: {exc}".splitlines()[0][:300]
    finally:
        pool.shutdown(wait=False)
    return None


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
def metrics(request: Request) -> Response:
    """Jobs per queue and status, queue depth, job durations and workers online, read from the DB."""
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)


class JobsCollector(Collector):
    """Reads the database at scrape time, so every API process reports the same numbers."""

    def __init__(self, maker: sessionmaker[Session], settings: Settings):
        self.maker, self.settings = maker, settings

    def collect(self) -> Iterator[Metric]:
        with self.maker() as session:
            by_state = queries.jobs_by_state(session)
            yield _jobs_gauge(by_state)
            depth = GaugeMetricFamily("crosscheck_queue_depth", "Waiting jobs per queue (queued or awaiting_npu)",
                                      labels=["queue"])
            for queue in sorted({q for q, _ in by_state} | set(QUEUES)):
                depth.add_metric([queue], sum(by_state.get((queue, s), 0) for s in WAITING))
            yield depth
            yield _durations(session)
            yield _workers_online(session, self.settings.job_heartbeat_s)


def _jobs_gauge(by_state: dict[tuple[str, str], int]) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily("crosscheck_jobs", "Jobs per queue and status", labels=["queue", "status"])
    for queue in sorted({q for q, _ in by_state} | set(QUEUES)):
        for status in STATUSES:
            gauge.add_metric([queue, status], by_state.get((queue, status), 0))
    return gauge


def _durations(session: Session) -> HistogramMetricFamily:
    """A histogram of finished jobs' duration_s, bucketed in SQL (one row per queue)."""
    duration = cast(Job.duration_s, Float)
    columns = [func.sum(case((duration <= b, 1), else_=0)) for b in DURATION_BUCKETS_S]
    stmt = (select(Job.queue, func.count(), func.coalesce(func.sum(duration), 0.0), *columns)
            .where(Job.status.in_(FINISHED), Job.duration_s.is_not(None)).group_by(Job.queue))
    hist = HistogramMetricFamily("crosscheck_job_duration_seconds", "Wall time of finished jobs", labels=["queue"])
    for queue, count, total, *cumulative in session.execute(stmt):
        buckets = [(str(float(b)), int(n or 0)) for b, n in zip(DURATION_BUCKETS_S, cumulative, strict=True)]
        hist.add_metric([queue], buckets + [("+Inf", int(count))], float(total))
    return hist


def _workers_online(session: Session, heartbeat_s: float) -> GaugeMetricFamily:
    since = utcnow() - timedelta(seconds=ONLINE_HEARTBEATS * heartbeat_s)
    online = session.scalar(select(func.count()).select_from(Worker).where(Worker.last_heartbeat >= since)) or 0
    return GaugeMetricFamily("crosscheck_workers_online", "Workers with a recent heartbeat", value=int(online))


def metrics_registry(maker: sessionmaker[Session], settings: Settings) -> CollectorRegistry:
    """A registry of our own (not the global one), so every app instance can have one."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobsCollector(maker, settings))
    return registry
