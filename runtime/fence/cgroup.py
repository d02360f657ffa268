"""A job's own cgroup: a limit on its real memory and process count as a whole (Linux).

RLIMIT_AS limited each process's address space: three children could each use the whole limit,
and pypto's threads failed on real cases whose address space was large but whose memory was not.
A cgroup limits what the job's process tree really uses. cgroup v2 (one unified hierarchy) and v1
(`memory` and `pids` hierarchies) are both supported; the job leader makes the group while still
privileged, and the job process joins it before it runs anything (docs/SECURITY.md, Sandbox).
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "crosscheck"  # every job's group lives under this one
REMOVE_TRIES = 50  # x 20 ms: the killed members' exit is asynchronous


def _own_path(controller: str) -> str:
    """This process's cgroup path for a v1 controller ('memory'), or the v2 one ('')."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        names = controllers.split(",") if controllers else [""]
        if controller in names:
            return path
    return "/"


def _v1_parent(root: Path, controller: str) -> Path:
    """Where v1 job groups go: under our own group, so any limit the host set on us still covers them."""
    mount = root / controller
    own = mount / _own_path(controller).lstrip("/")
    return (own if own.is_dir() else mount) / GROUP


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read_counts(path: Path) -> dict[str, int]:
    """A flat keyed file ('oom_kill 1'), as ints; empty when unreadable."""
    counts = {}
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().lstrip("-").isdigit():
                counts[key] = int(value)
    except OSError:
        pass
    return counts


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class JobCgroup:
    """One job's cgroup: one dir (v2) or a memory and a pids dir (v1)."""
    version: int
    memory_dir: Path
    pids_dir: Path
    memory_bytes: int
    pids: int

    @classmethod
    def create(cls, name: str, memory_bytes: int, pids: int,
               root: Path = CGROUP_ROOT) -> tuple[JobCgroup | None, str]:
        """(the group, "") or (None, why not): no cgroup fs, not writable, or a controller missing."""
        try:
            if (root / "cgroup.controllers").exists():
                return cls._create_v2(root, name, memory_bytes, pids), ""
            return cls._create_v1(root, name, memory_bytes, pids), ""
        except OSError as exc:
            return None, f"no job cgroup ({exc}); memory is watched by polling RSS instead"

    @classmethod
    def _create_v2(cls, root: Path, name: str, memory_bytes: int, pids: int) -> JobCgroup:
        available = (root / "cgroup.controllers").read_text().split()
        if not {"memory", "pids"} <= set(available):
            raise OSError(f"cgroup v2 at {root} lacks the memory or pids controller ({' '.join(available)})")
        # A v2 group with controllers for its children may hold no processes itself, so the jobs
        # go under a group of their own beside ours, not under the worker's group.
        parent = root / GROUP
        parent.mkdir(exist_ok=True)
        for at in (root, parent):
            enabled = (at / "cgroup.subtree_control").read_text().split()
            missing = [f"+{c}" for c in ("memory", "pids") if c not in enabled]
            if missing:
                _write(at / "cgroup.subtree_control", " ".join(missing))
        job = parent / name
        job.mkdir()
        group = cls(2, job, job, memory_bytes, pids)
        _write(job / "memory.max", str(memory_bytes))
        if (job / "memory.swap.max").exists():
            _write(job / "memory.swap.max", "0")
        _write(job / "pids.max", str(pids))
        return group

    @classmethod
    def _create_v1(cls, root: Path, name: str, memory_bytes: int, pids: int) -> JobCgroup:
        dirs = {}
        for controller in ("memory", "pids"):
            mount = root / controller
            if not (mount / "cgroup.procs").exists():
                raise OSError(f"no cgroup v1 {controller} hierarchy at {mount}")
            parent = _v1_parent(root, controller)
            parent.mkdir(exist_ok=True)
            dirs[controller] = parent / name
            dirs[controller].mkdir()
        group = cls(1, dirs["memory"], dirs["pids"], memory_bytes, pids)
        _write(group.memory_dir / "memory.limit_in_bytes", str(memory_bytes))
        if (group.memory_dir / "memory.memsw.limit_in_bytes").exists():
            try:  # memory + swap: no escaping the limit by swapping
                _write(group.memory_dir / "memory.memsw.limit_in_bytes", str(memory_bytes))
            except OSError:
                pass
        _write(group.pids_dir / "pids.max", str(pids))
        return group

    def join(self) -> None:
        """Move the calling process into the group ("0" is the writer in both versions)."""
        for folder in {self.memory_dir, self.pids_dir}:
            _write(folder / "cgroup.procs", "0")

    def members(self) -> list[int]:
        pids: set[int] = set()
        for folder in {self.memory_dir, self.pids_dir}:
            try:
                pids.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(pids)

    def kill(self) -> None:
        """SIGKILL every process in the group (a job without a PID namespace leaves strays)."""
        if self.version == 2 and (self.memory_dir / "cgroup.kill").exists():
            _write(self.memory_dir / "cgroup.kill", "1")
            return
        for pid in self.members():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue

    def limits_hit(self) -> list[str]:
        """Which limits stopped something: 'memory' (an OOM kill), 'processes' (a fork refused)."""
        hit = []
        if self.version == 2:
            oom = _read_counts(self.memory_dir / "memory.events").get("oom_kill", 0)
        else:
            oom = _read_counts(self.memory_dir / "memory.oom_control").get("oom_kill", 0)
        if oom:
            hit.append("memory")
        if _read_counts(self.pids_dir / "pids.events").get("max", 0):
            hit.append("processes")
        return hit

    def peak_bytes(self) -> int | None:
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        return _read_int(self.memory_dir / name)

    def peak_pids(self) -> int | None:
        return _read_int(self.pids_dir / "pids.peak")

    def remove(self) -> None:
        """Kill what is left, then remove the group's dirs (best effort)."""
        self.kill()
        for folder in {self.memory_dir, self.pids_dir}:
            for _ in range(REMOVE_TRIES):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def sweep(root: Path = CGROUP_ROOT) -> int:
    """Remove job groups whose leader is gone (it was killed before it could remove them); how many.

    A group's name carries its leader's pid (job-<pid>-<ns>); a live leader's group is never touched.
    """
    removed = 0
    parents = [root / GROUP, _v1_parent(root, "memory"), _v1_parent(root, "pids")]
    for parent in {p for p in parents if p.is_dir()}:
        for group in parent.glob("job-*"):
            leader = group.name.split("-")[1]
            if leader.isdigit() and not Path(f"/proc/{leader}").exists():
                try:
                    group.rmdir()
                    removed += 1
                except OSError:
                    continue
    return removed
