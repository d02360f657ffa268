"""A worker on a host without the graph-verify calculator builds it in the background and keeps working."""
from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Stack, alive, descendants, running

pytestmark = pytest.mark.slow


@pytest.fixture
def fresh_cache_stack(sqlite_env: dict[str, str], tmp_path: Path) -> Iterator[Stack]:
    env = {**sqlite_env, "CACHE_DIR": str(tmp_path / "empty-cache")}
    with running("calc", env, tmp_path) as stack:
        yield stack


def _builders(pid: int) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"calculator" in cmd and b"build" in cmd:
            found.append(child)
    return found


def test_calculator_builds_in_the_background_while_jobs_run(fresh_cache_stack: Stack) -> None:
    stack = fresh_cache_stack
    worker = stack.start_worker("e2e-calc")
    full = f"e2e-calc@{socket.gethostname()}"
    caps = next(w for w in stack.get("/workers")["items"] if w["name"] == full)["capabilities"]
    assert "being built" in caps["graph_verify"]
    builders = _builders(worker.pid)
    assert len(builders) == 1, builders

    job = stack.submit("relu")[0]
    done = stack.wait_job(job["id"])
    assert done["status"] == "succeeded", done
    cases = stack.get(f"/jobs/{job['id']}/report")["cases"]
    # The build takes about a minute; the job a few seconds, without graph verify meanwhile.
    assert [c["verdict"] for c in cases] == ["sim_output_unwritten"] * 2

    worker.send_signal(signal.SIGTERM)  # warm shutdown: the worker stops its build too
    assert worker.wait(timeout=60) == 0
    stack.wait(lambda: not [p for p in builders if alive(p)], 30, "the calculator build to stop")
    assert not (Path(stack.env["CACHE_DIR"]) / "calculator" / ".building").exists()
