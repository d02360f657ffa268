"""The producer side of the job queue (its contract: jobqueue/): a minimal Celery app, enqueue, broker upkeep.

The server never imports worker tasks; it sends them by name. Jobs are enqueued only after the
transaction that created them commits, and a failed send is not an error: the job stays owed in the
database's outbox (the source of truth) and the relay sends it within seconds (server/relay.py).
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from celery import Celery  # type: ignore[import-untyped]
from sqlalchemy import create_engine, inspect, text

from jobqueue import SQLA_PREFIX, TASK_RUN_JOB, configure_sqlite_transport
from server.config import Settings, get_settings

log = logging.getLogger(__name__)

# A key the producer leaves in a Redis broker: gone means the broker lost its messages (server/relay.py).
BROKER_MARK_KEY = "crosscheck:broker-mark"
HARD_LIMIT_GRACE_S = 60.0  # time_limit = timeout_s + this: the soft limit lets the worker report first
BROKER_TIMEOUT_S = 2.0
# Re-sending is best effort, so give up fast rather than hold a request open.
PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def celery_config(settings: Settings) -> dict[str, Any]:
    """Broker settings shared by the producer and (if it wants them) the worker."""
    url = settings.resolved_broker_url
    conf: dict[str, Any] = {
        "broker_url": url,
        "broker_connection_timeout": BROKER_TIMEOUT_S,
        "broker_connection_retry_on_startup": False,
        "task_publish_retry_policy": PUBLISH_RETRY_POLICY,
        "task_serializer": "json",
        "accept_content": ["json"],
    }
    if url.startswith(("redis://", "rediss://")):
        conf["broker_transport_options"] = {"socket_connect_timeout": BROKER_TIMEOUT_S,
                                            "socket_timeout": BROKER_TIMEOUT_S}
    return conf


class Producer:
    """Sends job messages and looks after the broker; one per process (or per app in tests)."""

    def __init__(self, settings: Settings):
        self.broker_url = settings.resolved_broker_url
        configure_sqlite_transport(self.broker_url, settings.broker_poll_s)
        self.celery = Celery("crosscheck-api", set_as_current=False)
        self.celery.conf.update(celery_config(settings))
        self._redis: Any = None
        # Fair dispatch: a request or sweep only wakes the relay, which sends by free worker slots.
        self.fair = settings.fair_dispatch
        self.wanted = threading.Event()

    def enqueue(self, job_id: int, attempt: int, queue: str, timeout_s: float) -> bool:
        """Send `jobs.run(job_id, attempt)` to the mode's queue; False when the broker refused."""
        try:
            self.celery.send_task(TASK_RUN_JOB, args=[job_id, attempt], queue=queue,
                                  time_limit=timeout_s + HARD_LIMIT_GRACE_S, soft_time_limit=timeout_s,
                                  retry_policy=PUBLISH_RETRY_POLICY)
        except Exception:  # any send failure leaves the job queued in the DB; the sweeper re-sends it
            log.warning("job.enqueue_failed job_id=%s attempt=%s queue=%s", job_id, attempt, queue, exc_info=True)
            return False
        log.info("job.enqueued job_id=%s attempt=%s queue=%s", job_id, attempt, queue)
        return True

    def ping(self, timeout_s: float = BROKER_TIMEOUT_S) -> None:
        """Raise when the broker cannot be reached within about timeout_s."""
        with self.celery.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout_s)

    def _redis_client(self) -> Any:
        if self._redis is None:
            import redis

            self._redis = redis.Redis.from_url(self.broker_url, socket_timeout=BROKER_TIMEOUT_S,
                                               socket_connect_timeout=BROKER_TIMEOUT_S)
        return self._redis

    def broker_emptied(self) -> bool:
        """Whether a Redis broker lost its messages since mark_broker() (restarted without its data, flushed);
        raises when it cannot be reached. The embedded broker is a file of ours: never."""
        if not self.broker_url.startswith(("redis://", "rediss://")):
            return False
        return not self._redis_client().exists(BROKER_MARK_KEY)

    def mark_broker(self) -> None:
        if self.broker_url.startswith(("redis://", "rediss://")):
            self._redis_client().set(BROKER_MARK_KEY, "1")

    def purge_consumed(self, older_than_s: float = 300.0) -> int:
        """Delete consumed messages from the embedded SQLite broker (kombu never deletes them)."""
        if not self.broker_url.startswith(SQLA_PREFIX):
            return 0
        engine = create_engine(self.broker_url.removeprefix(SQLA_PREFIX))
        # kombu stamps `timestamp` (local naive time, stored as text on SQLite) when a message is consumed.
        limit = (datetime.now() - timedelta(seconds=older_than_s)).strftime("%Y-%m-%d %H:%M:%S.%f")
        try:
            with engine.begin() as conn:
                if not inspect(conn).has_table("kombu_message"):
                    return 0
                delete = text("DELETE FROM kombu_message WHERE visible = :consumed AND timestamp < :limit")
                result = conn.execute(delete, {"consumed": False, "limit": limit})
                return int(result.rowcount or 0)
        finally:
            engine.dispose()

    def close(self) -> None:
        self.celery.close()
        if self._redis is not None:
            self._redis.close()


@lru_cache
def default_producer() -> Producer:
    return Producer(get_settings())


def enqueue(job_id: int, attempt: int, queue: str, timeout_s: float) -> bool:
    """Send one job with the process-wide settings (the CLI and scripts; the API uses its own)."""
    return default_producer().enqueue(job_id, attempt, queue, timeout_s)
