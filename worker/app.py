"""The Celery app (`celery -A worker.app worker -Q sim`), configured from worker.config.WorkerSettings.

The broker is not our source of truth (docs/platform.md §1: a SIGKILLed worker's message is never
redelivered by the SQLite transport, and only after the visibility timeout by Redis). Job state
lives in the server's database: a compare-and-set claim makes every delivery idempotent, and the
server re-enqueues stale jobs. The settings below only make redelivery as good as each broker allows.
"""
from __future__ import annotations

import warnings

from celery import Celery
from celery.exceptions import SecurityWarning
from kombu import Queue

from jobqueue import QUEUES, SQLA_PREFIX, TASK_RUN_JOB, configure_sqlite_transport, worker_queues
from runtime.devices.pypto_api import installed_version
from worker.config import WorkerSettings, get_settings
from worker.capabilities import host_modes

# Redis redelivers an unacked message after this long, so it must exceed the longest job (a job
# that outlives it runs twice, but the second delivery's claim fails harmlessly). A lost message
# is recovered much sooner by the server's stale sweep, so erring long costs little.
REDIS_VISIBILITY_TIMEOUT_S = 12 * 3600
# kombu's sweep of unacked Redis messages runs every interval * throttle seconds (default 100 s).
REDIS_UNACKED_RESTORE_INTERVAL_S = 10
REDIS_UNACKED_RESTORE_THROTTLE = 1


def create_app(settings: WorkerSettings | None = None) -> Celery:
    settings = settings or get_settings()
    broker = settings.resolved_broker_url
    app = Celery("crosscheck", broker=broker, include=["worker.tasks"])
    transport_options: dict[str, object] = {}
    if broker.startswith(SQLA_PREFIX):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        configure_sqlite_transport(broker, settings.broker_poll_s)
    elif broker.startswith(("redis://", "rediss://")):
        transport_options = {
            "visibility_timeout": REDIS_VISIBILITY_TIMEOUT_S,
            "unacked_restore_interval": REDIS_UNACKED_RESTORE_INTERVAL_S,
            "unacked_restore_throttle": REDIS_UNACKED_RESTORE_THROTTLE,
        }
    # Without -Q a worker consumes only the modes this host can run: never npu on a CPU host.
    modes = host_modes()
    app.conf.update(
        broker_transport_options=transport_options,
        broker_connection_retry_on_startup=True,
        # ...and of those, the queues of its own pypto (docs/versions.md §3).
        task_queues=[Queue(name) for name in worker_queues([m for m in QUEUES if m in modes], installed_version())],
        task_default_queue="sim",
        task_routes={TASK_RUN_JOB: {"queue": "sim"}},  # the server names the queue per job (its mode)
        task_acks_late=True,  # a job's message goes only once the job is done...
        task_reject_on_worker_lost=True,  # ...and back to the queue if its pool process was killed
        worker_prefetch_multiplier=1,  # a job can take minutes: never hoard messages
        task_ignore_result=True,
        result_backend=None,
        task_track_started=False,
        worker_send_task_events=False,
        worker_hijack_root_logger=True,
        worker_proc_alive_timeout=30.0,
        # Time limits come with each message (the server sets them from the job's timeout).
        task_time_limit=None,
        task_soft_time_limit=None,
        worker_max_tasks_per_child=None,
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    return app


# The worker runs as root on purpose: each case's leader needs it to build the sandbox, and the job
# itself drops to an unprivileged uid of its own (docs/service.md §2). Celery's
# advice to pass --uid would break the sandbox, so its warning is only noise the user cannot act on.
warnings.filterwarnings("ignore", category=SecurityWarning, message="You're running the worker with superuser")
app = create_app()

from worker import lifecycle  # noqa: E402,F401  (connects the worker's signal handlers)
