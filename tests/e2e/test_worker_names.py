"""Workers started with default names on one host get a name each (issue 36), and a name a running
worker holds is refused at start with a message naming it (server/commands/worker_name.py)."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from server.commands import worker_name
from tests.conftest import REPO
from tests.e2e.conftest import START_DEADLINE_S, running


def test_two_default_named_workers_on_one_host_are_two_workers(sqlite_env, tmp_path: Path) -> None:
    env = dict(sqlite_env, CROSSCHECK_CACHE_DIR=str(tmp_path / "cache"))  # the name locks: private to this test
    with running("names", env, tmp_path) as stack:
        for i in range(2):
            stack.workers.append(stack._spawn([sys.executable, "-m", "server.cli", "worker", "--queue", "sim"],
                                              f"worker-{i}.log"))
        host = socket.gethostname()
        seen: dict[str, object] = {}

        def both_online() -> bool:
            for proc in stack.workers:
                assert proc.poll() is None, f"a worker exited: {(tmp_path / 'worker-1.log').read_text()[-3000:]}"
            seen["workers"] = {w["name"]: w["online"] for w in stack.get("/workers")["items"]}
            return sum(seen["workers"].values()) == 2  # type: ignore[attr-defined]

        stack.wait(both_online, START_DEADLINE_S, "two workers online", tmp_path / "worker-1.log", seen)
        assert set(seen["workers"]) == {f"sim@{host}", f"sim-2@{host}"}  # type: ignore[arg-type]


def test_a_name_a_running_worker_holds_is_refused(sqlite_env, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = dict(sqlite_env, CROSSCHECK_CACHE_DIR=str(cache))
    where = cache / f"worker-names-{__import__('os').getuid()}"
    where.mkdir(parents=True)
    node, lock = worker_name.claim(["sim"], "box", where)  # as a running `crosscheck worker --name box` holds it
    with lock:
        done = subprocess.run([sys.executable, "-m", "server.cli", "worker", "--queue", "sim", "--name", "box"],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"worker name '{node}' is taken by a running worker on this host" in done.stderr
    assert "another --name" in done.stderr
