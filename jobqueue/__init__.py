"""The job queue's contract, shared by its producer (server) and its consumer (worker), which
import nothing of each other: the task name, one queue per mode, and the embedded broker.

Imports nothing of ours but the runtime's modes (.importlinter).
"""
from __future__ import annotations

from pathlib import Path

from runtime.modes import MODES

TASK_RUN_JOB = "jobs.run"  # args: [job_id, attempt]
QUEUES = MODES  # one queue per mode: the server sends each job to the queue named by its mode
SQLA_PREFIX = "sqla+"
# Where a single-host install (`crosscheck up`) keeps its files, the embedded broker among them,
# so the server and the worker must agree on it.
DEFAULT_DATA_DIR = Path("crosscheck-data")


def embedded_broker_url(data_dir: Path) -> str:
    """The SQLite broker in data_dir: the default when BROKER_URL is unset."""
    return f"sqla+sqlite:///{(data_dir / 'broker.db').resolve()}"


def configure_sqlite_transport(broker_url: str, poll_s: float) -> None:
    """Set the embedded broker's polling interval on kombu's transport class.

    Not in broker_transport_options: kombu passes those to create_engine, which rejects
    `polling_interval` and crashes the worker (docs/platform.md §1).
    """
    if broker_url.startswith(SQLA_PREFIX):
        from kombu.transport import sqlalchemy as sqla_transport

        sqla_transport.Transport.polling_interval = poll_s
