"""The job cgroup (runtime.fence.cgroup) on this host's real cgroup fs: limits hit, peaks read, groups removed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.fence import cgroup

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root")

HOG = "b = bytearray(256 * 2**20); b[::4096] = b'x' * len(range(0, len(b), 4096))"
FORKS = "import os, time\nfor _ in range(20):\n    if os.fork() == 0:\n        time.sleep(5); os._exit(0)\n"


def _group(name: str, memory: int, pids: int) -> cgroup.JobCgroup:
    group, why = cgroup.JobCgroup.create(f"job-{os.getpid()}-{name}", memory, pids)
    if group is None:
        pytest.skip(why)
    return group


def _run_inside(group: cgroup.JobCgroup, code: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code], preexec_fn=group.join, capture_output=True, timeout=120)


def test_a_memory_hog_is_killed_and_the_limit_named():
    group = _group("mem", 64 * 2**20, 64)
    try:
        done = _run_inside(group, HOG)
        assert done.returncode == -9
        assert group.limits_hit() == ["memory"]
        assert group.peak_bytes() is not None and group.peak_bytes() <= 64 * 2**20
    finally:
        group.remove()
    assert not group.memory_dir.exists() and not group.pids_dir.exists()


def test_a_refused_fork_is_the_process_limit():
    group = _group("pids", 2**30, 8)
    try:
        done = _run_inside(group, FORKS)
        assert done.returncode != 0 and b"Resource temporarily unavailable" in done.stderr
        assert group.limits_hit() == ["processes"]
    finally:
        group.remove()


def test_within_its_limits_nothing_is_hit():
    group = _group("ok", 2**30, 64)
    try:
        assert _run_inside(group, "print(sum(range(10)))").returncode == 0
        assert group.limits_hit() == [] and group.members() == []
    finally:
        group.remove()


def test_sweep_removes_only_groups_of_dead_leaders():
    live = _group("live", 2**30, 64)
    dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout.strip()
    stale = [d.parent / f"job-{dead_pid}-stale" for d in {live.memory_dir, live.pids_dir}]
    for folder in stale:
        folder.mkdir()
    try:
        assert cgroup.sweep() >= len(stale)
        assert not any(f.exists() for f in stale) and live.memory_dir.exists()
    finally:
        live.remove()
        for folder in stale:
            if folder.exists():
                folder.rmdir()


def test_without_a_cgroup_fs_the_reason_is_given(tmp_path: Path):
    group, why = cgroup.JobCgroup.create("job-1-x", 2**30, 64, root=tmp_path)
    assert group is None and "no cgroup v1 memory hierarchy" in why
