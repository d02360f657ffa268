"""Fault injection: the real API and Celery workers (tests/e2e's Stack) while we kill what they rely on.

Jobs here run a short script (a sleep, then nothing launched: verdict not_run), so that a kill lands
mid-job and the whole module stays within a few minutes; what is measured is whether each job's
result lands exactly once, not the verdict.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server import migrate
from server.config import Settings
from tests.e2e.conftest import FAST_ENV, Stack, _tokens, clean_env, running

FAULT_ENV = {**FAST_ENV, "SWEEP_INTERVAL_S": "1", "MAX_ATTEMPTS": "60"}
SLEEPER = "import time\ntime.sleep({seconds})\nprint('slept')\n"


def env_for(data: Path, calculator_cache: Path, **extra: str) -> dict[str, str]:
    """A migrated SQLite data dir (or the given DATABASE_URL) with its admin and worker tokens."""
    data.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=data, database_url=extra.get("DATABASE_URL", ""))
    migrate.upgrade(settings.resolved_database_url)
    admin, worker = _tokens(settings.resolved_database_url)
    return clean_env(DATA_DIR=str(data), CACHE_DIR=str(calculator_cache), WORKER_TOKEN=worker,
                     CROSSCHECK_TOKEN=admin, **{**FAULT_ENV, **extra})


def submit_sleeper(stack: Stack, seconds: float = 20, key: str | None = None) -> dict[str, Any]:
    """One SIM job of a script that sleeps, so that it is running when we strike."""
    data = SLEEPER.format(seconds=seconds).encode()
    return dict(stack.post("/submissions", data={"modes": ["sim"]}, files={"file": ("sleeper.py", data)},
                           headers={"Idempotency-Key": key or uuid.uuid4().hex}))


def results_of(stack: Stack, job_id: int) -> list[dict[str, Any]]:
    return list(stack.get("/cases", job_id=job_id, limit=200)["items"])


@pytest.fixture
def fault_stack(tmp_path: Path, calculator_cache: Path) -> Iterator[Stack]:
    """An API on SQLite and the embedded broker; the test starts and kills workers."""
    with running("faults", env_for(tmp_path / "data", calculator_cache), tmp_path) as s:
        yield s
