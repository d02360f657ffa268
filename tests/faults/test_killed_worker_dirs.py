"""A worker SIGKILLed mid-job leaves its job dir and its warm parent's scratch behind; the next worker
to start on the host removes them, and leaves a live owner's alone (runtime/fence/scratch.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime.fence.scratch import JOB_PREFIX, WARM_PREFIX, OwnedDir
from tests.e2e.conftest import Stack
from tests.faults.conftest import env_for, submit_sleeper

pytestmark = pytest.mark.slow


def _ours(tmp: Path) -> set[Path]:
    return {p for p in tmp.iterdir() if p.name.startswith((JOB_PREFIX, WARM_PREFIX))}


def test_the_next_worker_removes_a_killed_workers_dirs(tmp_path: Path, calculator_cache: Path) -> None:
    tmp = tmp_path / "tmp"  # the workers' temp dir, so that nobody else's runs are in the picture
    tmp.mkdir()
    tmp.chmod(0o1777)  # like /tmp
    stack = Stack("dirs", env_for(tmp_path / "data", calculator_cache, TMPDIR=str(tmp)), tmp_path)
    live = None
    try:
        stack.start_api()
        victim = stack.start_worker("victim")
        job = submit_sleeper(stack, seconds=20)["jobs"][0]["id"]
        stack.wait(lambda: any(p.name.startswith(f"{JOB_PREFIX}{job}-") for p in tmp.iterdir()), 120,
                   f"job {job}'s dir")
        live = OwnedDir(f"{JOB_PREFIX}999-", tmp)  # a concurrent worker's job, alive through the sweep
        left = _ours(tmp) - {live.path}
        stack.kill_worker(victim)
        assert sorted(p.name[:15] for p in left) == [f"{JOB_PREFIX}{job}-"[:15], WARM_PREFIX[:15]], left
        assert all(p.is_dir() for p in left)

        stack.start_worker("next")  # its start-up sweep runs before it posts its first heartbeat
        assert not [p for p in left if p.exists()], "the killed worker's dirs are still there"
        assert live.path.is_dir(), "a dir whose owner lives was swept"
        live.cleanup()
        assert stack.wait_job(job)["status"] in ("succeeded", "failed")  # re-queued; the new worker ran it (not_run)
    finally:
        if live is not None:
            live.cleanup()
        stack.stop()
    assert not _ours(tmp), "a worker stopped normally left dirs behind"
