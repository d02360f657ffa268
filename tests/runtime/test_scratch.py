"""Temp dirs owned by a live process survive a sweep; those of a killed owner do not (runtime/fence/scratch.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from runtime.fence.scratch import JOB_PREFIX, OWNER_MARK, RUN_PREFIX, WARM_PREFIX, OwnedDir, sweep_dead

HOLDER = """
import sys, time
from pathlib import Path
from runtime.fence.scratch import OwnedDir
owned = OwnedDir(sys.argv[1], Path(sys.argv[2]))
(owned.path / "work").mkdir()
print(owned.path, flush=True)
time.sleep(600)
"""


def _holder(prefix: str, parent: Path) -> tuple[subprocess.Popen[str], Path]:
    """Another process that makes an owned dir in parent and keeps living."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, prefix, str(parent)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    path = Path(proc.stdout.readline().strip())
    proc.stdout.close()
    return proc, path


def test_a_killed_owners_dirs_go_and_a_live_owners_stay(tmp_path: Path) -> None:
    victim, dead_dir = _holder(f"{JOB_PREFIX}7-", tmp_path)
    victim_warm = _holder(WARM_PREFIX, tmp_path)
    live, live_dir = _holder(f"{JOB_PREFIX}8-", tmp_path)
    try:
        for proc in (victim, victim_warm[0]):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert dead_dir.is_dir() and victim_warm[1].is_dir()  # nothing removes them by itself
        removed = sweep_dead(tmp_path)
        assert sorted(removed) == sorted([dead_dir, victim_warm[1]])
        assert not dead_dir.exists() and not victim_warm[1].exists()
        assert live_dir.is_dir() and (live_dir / "work").is_dir()
    finally:
        live.kill()
        live.wait()
    assert sweep_dead(tmp_path) == [live_dir]  # once its owner is gone, it goes too


def test_this_process_own_dirs_are_never_swept(tmp_path: Path) -> None:
    with OwnedDir(RUN_PREFIX, tmp_path) as path:
        assert (path / OWNER_MARK).read_text().strip() == str(os.getpid())
        # flock locks belong to the open file: a second open in the same process cannot take it either
        assert sweep_dead(tmp_path) == [] and path.is_dir()
    assert not path.exists()


def test_unmarked_disowned_and_foreign_dirs_are_left_alone(tmp_path: Path) -> None:
    unmarked = tmp_path / f"{JOB_PREFIX}1-legacy"  # an older version's, or one caught before its mark
    unmarked.mkdir()
    kept = OwnedDir(RUN_PREFIX, tmp_path).disown()  # `crosscheck run --keep`: the user's now
    foreign = tmp_path / f"{WARM_PREFIX}other-user"
    foreign.mkdir()
    (foreign / OWNER_MARK).write_text("1\n")
    os.chown(foreign, 65534, 65534)  # another user's (nobody's) run: not ours to remove
    other_name = tmp_path / "crosscheck-upload-x"
    other_name.mkdir()
    (other_name / OWNER_MARK).write_text("1\n")
    assert sweep_dead(tmp_path) == []
    assert all(p.is_dir() for p in (unmarked, kept, foreign, other_name))
