"""What each pytest-xdist worker owns, so that tests run side by side on the shared services.

The README's test command runs the suite in parallel (docs/dependencies.md §3). Temp dirs are per
worker already (pytest's tmp_path), ports come from the kernel (free_port), PostgreSQL schemas and
databases carry a unique name. What is left to share out is the Redis database number: the e2e
tests flush theirs, so each worker gets its own.
"""
from __future__ import annotations

import os

# Redis databases handed to workers, counting down from 13 (db 14 and 15 stay for hand-run checks).
REDIS_FIRST_DB = 13
REDIS_LAST_DB = 4


def worker_index() -> int:
    """0, 1, ... for pytest-xdist's gw0, gw1, ...; 0 when the tests run in one process."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw"))


def worker_tag() -> str:
    """A short name of this worker for databases, schemas and directories: 'gw0', 'gw1', ..."""
    return f"gw{worker_index()}"


def redis_db() -> int:
    """This worker's own Redis database number (the e2e tests flush it before and after)."""
    db = REDIS_FIRST_DB - worker_index()
    if db < REDIS_LAST_DB:
        raise RuntimeError(f"too many test workers for Redis: worker {worker_tag()} would need db {db}; "
                           f"run with at most {REDIS_FIRST_DB - REDIS_LAST_DB + 1} workers")
    return db
