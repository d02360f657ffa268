"""Jobs that ask for a pypto version: which queue they go to, and refusing them when no worker has it.

A submission asks with `pypto` (`crosscheck submit --pypto`) or `requires_pypto` in its test_cases.json.
Its jobs go to `<mode>@<version>` (jobqueue.queue_name), which only workers with that pypto consume; a
submission that asks for a version no online worker serves is refused with 409, naming the versions
that are online (docs/versions.md §3).
"""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from jobqueue import parse_queue, queue_name
from runtime.devices.pypto_api import check_version
from server.config import Settings
from server.errors import Conflict, InvalidInput
from server.models import Worker
from server.services.workers import is_online


def requested_version(asked: str | None, required: str | None) -> str | None:
    """The version the submission asks for: the explicit one, else its case file's; InvalidInput on a
    malformed version or when the two disagree."""
    if asked is not None:
        try:
            asked = check_version(asked, "pypto")
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
    if asked and required and asked != required:
        raise InvalidInput(f"pypto {asked} contradicts test_cases.json's requires_pypto {required}")
    return asked or required


def queues_for(modes: list[str], version: str | None) -> dict[str, str]:
    """mode -> the queue its job goes to."""
    return {mode: queue_name(mode, version) for mode in modes}


def check_served(session: Session, settings: Settings, queues: dict[str, str]) -> None:
    """Conflict naming the versions online when a versioned queue has no online worker."""
    online = [w for w in session.scalars(select(Worker)) if is_online(w, settings.job_heartbeat_s)]
    for mode, queue in queues.items():
        _, version = parse_queue(queue)
        if version is None or any(queue in (w.queues or []) for w in online):
            continue
        have = sorted({str(((w.capabilities or {}).get("versions") or {}).get("pypto")) for w in online})
        raise Conflict(f"no online worker has pypto {version} for {mode} jobs (online workers have pypto "
                       f"{', '.join(have) if have else 'none: no worker is online'}); start a worker with pypto "
                       f"{version} (docs/versions.md §4), or submit without a pypto version")
