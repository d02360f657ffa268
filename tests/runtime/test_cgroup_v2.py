"""The cgroup v2 side of runtime.fence.cgroup.

This host mounts memory and pids as v1; its cgroup2 hierarchy offers neither (only hugetlb), and
they cannot be moved to it while v1 groups exist. So v2's limits are checked on a directory tree
that mimics the v2 files (what create() writes, how limits_hit() reads memory.events and
pids.events), and the real cgroup2 hierarchy is used for what it can do without those controllers:
the refusal, and join, members, cgroup.kill and removal (docs/SECURITY.md, Sandbox).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.fence import cgroup

MIB = 2**20
ALL = "cpuset cpu io memory hugetlb pids rdma misc"


def v2_tree(root: Path, controllers: str = ALL, enabled: str = "") -> Path:
    """A v2 root as the kernel shows it, and the crosscheck group's control file."""
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(enabled + "\n")
    (root / cgroup.GROUP).mkdir()
    (root / cgroup.GROUP / "cgroup.subtree_control").write_text(enabled + "\n")
    return root


def test_create_enables_the_controllers_and_writes_the_limits(tmp_path: Path):
    root = v2_tree(tmp_path)
    group, why = cgroup.JobCgroup.create("job-1-a", 256 * MIB, 64, root=root)
    assert group is not None, why
    assert (group.version, group.memory_dir, group.pids_dir) == (2, root / cgroup.GROUP / "job-1-a",
                                                                 root / cgroup.GROUP / "job-1-a")
    for at in (root, root / cgroup.GROUP):
        assert (at / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (group.memory_dir / "memory.max").read_text() == str(256 * MIB)
    assert (group.pids_dir / "pids.max").read_text() == "64"
    assert not (group.memory_dir / "memory.swap.max").exists()  # written only where the kernel has it


def test_controllers_already_enabled_are_left_alone(tmp_path: Path):
    root = v2_tree(tmp_path, enabled="cpu memory pids")
    group, why = cgroup.JobCgroup.create("job-1-b", 256 * MIB, 64, root=root)
    assert group is not None, why
    assert (root / "cgroup.subtree_control").read_text() == "cpu memory pids\n"


def test_a_v2_root_without_memory_or_pids_is_refused_with_the_reason(tmp_path: Path):
    group, why = cgroup.JobCgroup.create("job-1-c", 256 * MIB, 64, root=v2_tree(tmp_path, "cpu io hugetlb"))
    assert group is None and "lacks the memory or pids controller (cpu io hugetlb)" in why
    assert not (tmp_path / cgroup.GROUP / "job-1-c").exists()


@pytest.mark.parametrize(("memory_events", "pids_events", "hit"), [
    ("low 0\nhigh 0\nmax 12\noom 1\noom_kill 0\noom_group_kill 0\n", "max 0\n", []),  # reclaim, no kill
    ("low 0\nhigh 0\nmax 40\noom 1\noom_kill 1\noom_group_kill 0\n", "max 0\n", ["memory"]),
    ("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", "max 3\n", ["processes"]),
    ("oom_kill 2\n", "max 1\n", ["memory", "processes"]),
], ids=["throttled", "oom-kill", "fork-refused", "both"])
def test_limits_hit_are_read_from_memory_events_and_pids_events(tmp_path: Path, memory_events, pids_events, hit):
    group, why = cgroup.JobCgroup.create("job-1-d", 256 * MIB, 64, root=v2_tree(tmp_path))
    assert group is not None, why
    (group.memory_dir / "memory.events").write_text(memory_events)
    (group.pids_dir / "pids.events").write_text(pids_events)
    assert group.limits_hit() == hit


def test_peaks_join_and_kill_use_the_v2_files(tmp_path: Path):
    group, why = cgroup.JobCgroup.create("job-1-e", 256 * MIB, 64, root=v2_tree(tmp_path))
    assert group is not None, why
    (group.memory_dir / "memory.peak").write_text("104857600\n")
    (group.pids_dir / "pids.peak").write_text("7\n")
    assert (group.peak_bytes(), group.peak_pids()) == (100 * MIB, 7)
    group.join()
    assert (group.memory_dir / "cgroup.procs").read_text() == "0"
    (group.memory_dir / "cgroup.kill").write_text("0\n")
    group.kill()
    assert (group.memory_dir / "cgroup.kill").read_text() == "1"


def test_sweep_removes_the_v2_groups_of_dead_leaders(tmp_path: Path):
    root = v2_tree(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (root / cgroup.GROUP / f"job-{dead}-x").mkdir()
    (root / cgroup.GROUP / f"job-{os.getpid()}-y").mkdir()
    assert cgroup.sweep(root) == 1
    assert sorted(p.name for p in (root / cgroup.GROUP).glob("job-*")) == [f"job-{os.getpid()}-y"]


# The real cgroup2 hierarchy of this kernel.


def _cgroup2_mount() -> Path | None:
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] == "cgroup2":
            return Path(fields[1])
    return None


def _real_v2() -> Path:
    mount = _cgroup2_mount()
    if os.geteuid() != 0 or mount is None or not os.access(mount, os.W_OK):
        pytest.skip("needs root and a writable cgroup2 hierarchy")
    return mount


def test_the_real_v2_hierarchy_is_used_or_refused_by_its_controllers():
    root = _real_v2()
    offered = set((root / "cgroup.controllers").read_text().split())
    group, why = cgroup.JobCgroup.create(f"job-{os.getpid()}-real", 256 * MIB, 64, root=root)
    try:
        if {"memory", "pids"} <= offered:
            assert group is not None and (group.memory_dir / "memory.max").read_text().strip() == str(256 * MIB)
        else:  # this host: memory and pids are v1's
            assert group is None and "lacks the memory or pids controller" in why
    finally:
        if group is not None:
            group.remove()


def test_join_members_kill_and_remove_on_the_real_v2_hierarchy():
    root = _real_v2()
    folder = root / cgroup.GROUP / f"job-{os.getpid()}-life"
    folder.parent.mkdir(exist_ok=True)
    folder.mkdir()
    group = cgroup.JobCgroup(2, folder, folder, 256 * MIB, 64)
    forks = "import os, time\nif os.fork() == 0:\n    time.sleep(300)\nprint(os.getpid(), flush=True)\ntime.sleep(300)\n"
    proc = None
    try:
        proc = subprocess.Popen([sys.executable, "-c", forks], preexec_fn=group.join, stdout=subprocess.PIPE,
                                text=True)
        assert proc.stdout is not None and int(proc.stdout.readline()) == proc.pid
        members = group.members()
        assert proc.pid in members and len(members) == 2  # the fork joined with its parent
        group.remove()  # cgroup.kill, then rmdir once they are gone
        assert proc.wait(timeout=60) == -9 and not folder.exists()
        assert all(not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
                   for pid in members)
    finally:
        _clean_up(folder, proc)


def _clean_up(folder: Path, proc: subprocess.Popen[str] | None) -> None:
    """Whatever the test left: its processes (by their pids in the group), the group, our parent group."""
    for pid in ([proc.pid] if proc else []) + (cgroup.JobCgroup(2, folder, folder, 0, 0).members()
                                              if folder.exists() else []):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    if proc is not None:
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    for empty in (folder, folder.parent):  # the crosscheck group, when no other test's job is in it
        for _ in range(50):
            try:
                empty.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
