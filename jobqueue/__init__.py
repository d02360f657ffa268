"""The job queue's contract, shared by its producer (server) and its consumer (worker), which
import nothing of each other: the task name, the queues (per mode, and per mode and pypto version),
and the embedded broker.

Imports nothing of ours but the runtime's modes (.importlinter).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.modes import MODES
from runtime.devices.pypto_api import REFERENCE_PYPTO

TASK_RUN_JOB = "jobs.run"  # args: [job_id, attempt]
QUEUES = MODES  # one queue per mode: the server sends each job to the queue named by its mode
# A job that asks for a pypto version goes to "<mode>@<version>" (docs/versions.md §3); a worker consumes
# the queues of its own pypto, and the plain mode queues only with the reference pypto.
VERSION_SEP = "@"
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
        _tolerate_concurrent_queue_creation(sqla_transport.Channel)


def _tolerate_concurrent_queue_creation(channel: Any) -> None:
    """Workers starting together race to create the same queue row; kombu's lock is per process, so
    the loser's UNIQUE violation killed its start-up. It re-reads the winner's row (docs/platform.md §1)."""
    original = channel._get_or_create
    if getattr(original, "tolerates_races", False):
        return

    def get_or_create(self: Any, queue: str) -> Any:
        from sqlalchemy.exc import IntegrityError

        try:
            return original(self, queue)
        except IntegrityError:
            self.session.rollback()
            return self.session.query(self.queue_cls).filter(self.queue_cls.name == queue).one()

    get_or_create.tolerates_races = True  # type: ignore[attr-defined]
    channel._get_or_create = get_or_create


def queue_name(mode: str, pypto: str | None = None) -> str:
    """`sim` for any job of the mode, `sim@0.2.0` for one that asks for that pypto."""
    return f"{mode}{VERSION_SEP}{pypto}" if pypto else mode


def parse_queue(name: str) -> tuple[str, str | None]:
    """(mode, pypto version or None) of a queue name."""
    mode, sep, version = name.partition(VERSION_SEP)
    return mode, (version if sep else None)


def worker_queues(modes: list[str], pypto: str | None) -> list[str]:
    """What a worker with this pypto consumes for these modes: `<mode>@<its version>` always, and the plain
    `<mode>` (jobs that ask for no version) only when its pypto is the reference one the project pins."""
    queues = [queue_name(m, pypto) for m in modes] if pypto else []
    if pypto == REFERENCE_PYPTO or pypto is None:
        queues += list(modes)
    return list(dict.fromkeys(queues))
