"""An API outage is an infrastructure failure: the worker retries the claim with backoff until it is back."""
from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.slow


@pytest.fixture
def stack(sqlite_env: dict[str, str], tmp_path: Path) -> Iterator[Stack]:
    # The job must reach the broker before any worker is online, so that the API can be down when one comes:
    # first come, first served (with fair dispatch it would wait in the database for a worker slot).
    s = Stack("retry", {**sqlite_env, "FAIR_DISPATCH": "false"}, tmp_path)
    try:
        s.start_api()
        yield s
    finally:
        s.stop()


def test_claim_is_retried_while_the_api_is_down(stack: Stack) -> None:
    job = stack.submit("relu")[0]
    assert stack.api is not None
    stack.api.send_signal(signal.SIGTERM)
    stack.api.wait(timeout=60)

    log = stack.logs / "worker-retry.log"
    worker = stack._spawn([sys.executable, "-m", "server.cli", "worker", "--queue", "sim", "--name", "retry"],
                          log.name)
    stack.workers.append(worker)
    stack.wait(lambda: "job.claim_retry" in log.read_text(), 120, "the worker to retry the claim", log)

    stack.start_api()  # same port, same database
    done = stack.wait_job(job["id"])
    assert done["status"] == "succeeded", done
    assert done["attempts"] == 1  # the same attempt, delivered again by Celery: no kernel ran twice
