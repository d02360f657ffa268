"""The job leader's watch over one job's resources: memory, processes and disk.

Memory and processes are the job cgroup's (runtime.cgroup) when the leader could make one; without
it an RSS watchdog polls the job's process tree. Disk has no kernel limit to lean on (RLIMIT_FSIZE
caps single files only), so the leader totals the job dir's blocks every DISK_POLL_S, less often
for a dir of many files.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from runtime.cgroup import JobCgroup

RSS_POLL_S = 0.2
DISK_POLL_S = 1.0
MAX_DISK_ENTRIES = 200_000  # files and dirs under the job dir; more is a flood in itself
PAGE = os.sysconf("SC_PAGE_SIZE")

# How a user raises each limit, unless the caller (e.g. the worker) names its own setting.
LIMIT_FLAGS = {"memory": "--memory GIB", "processes": "--processes N", "disk": "--disk GIB"}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(name))
    return tree


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of `pid` and all its descendants (shared pages counted in each)."""
    tree, total, todo = _children(), 0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += int(Path(f"/proc/{current}/statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
        todo.extend(tree.get(current, []))
    return total


def dir_bytes(root: Path, stop_above: int) -> tuple[int, int]:
    """(bytes allocated, entries) under root, links not followed; stops counting past stop_above."""
    total = entries = 0
    todo = [str(root)]
    while todo and total <= stop_above and entries <= MAX_DISK_ENTRIES:
        try:
            with os.scandir(todo.pop()) as it:
                for entry in it:
                    entries += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError:
            continue
    return total, entries


class Guard:
    """Polled by the leader while the job runs; says which limit, if any, the job broke."""

    def __init__(self, memory_bytes: int, disk_bytes: int, job_dir: Path, cgroup: JobCgroup | None):
        self.memory_bytes = memory_bytes
        self.disk_bytes = disk_bytes
        self.job_dir = job_dir
        self.cgroup = cgroup
        self.hit: list[str] = []
        self.peak_rss = 0
        self._next_rss = self._next_disk = 0.0

    def check(self, pid: int) -> str | None:
        """The limit the job just broke (the leader then kills it), or None."""
        now = time.monotonic()
        if now >= self._next_rss:
            self._next_rss = now + RSS_POLL_S
            if self.cgroup is not None:  # an OOM kill or a refused fork: the job is stopped as a whole
                for limit in self.cgroup.limits_hit():
                    return self._broke(limit)
            else:
                rss = tree_rss_bytes(pid)
                self.peak_rss = max(self.peak_rss, rss)
                if rss > self.memory_bytes:
                    return self._broke("memory")
        if now >= self._next_disk:
            used, entries = dir_bytes(self.job_dir, self.disk_bytes)
            # A job dir of many files costs more to total: poll it less often, at most 10% of a core.
            self._next_disk = time.monotonic() + max(DISK_POLL_S, 10 * (time.monotonic() - now))
            if used > self.disk_bytes or entries > MAX_DISK_ENTRIES:
                return self._broke("disk")
        return None

    def _broke(self, limit: str) -> str:
        if limit not in self.hit:
            self.hit.append(limit)
        return limit

    def report(self, nproc: int, flags: dict[str, str] | None = None) -> dict[str, Any]:
        """What the job used and which limits it hit, for the leader's report."""
        hit = list(self.hit)
        if self.cgroup is not None:
            hit += [h for h in self.cgroup.limits_hit() if h not in hit]
        names = {**LIMIT_FLAGS, **(flags or {})}
        values = {"memory": f"{self.memory_bytes / 2**30:.2f} GiB", "processes": f"{nproc} processes",
                  "disk": f"{self.disk_bytes / 2**30:.2f} GiB"}
        how = {"memory": "its real memory (cgroup)" if self.cgroup else "its process tree's resident memory",
               "processes": "its processes and threads", "disk": "its job dir's disk use"}
        out: dict[str, Any] = {
            "memory_limit": f"cgroup v{self.cgroup.version}" if self.cgroup else "rss watchdog",
            "peak_memory_bytes": (self.cgroup.peak_bytes() if self.cgroup else self.peak_rss),
            "peak_processes": self.cgroup.peak_pids() if self.cgroup else None,
        }
        if hit:
            first = hit[0]
            out["resource_limit"] = {
                "limit": first, "all": hit,
                "reason": f"the job hit its {first} limit ({how[first]}, {values[first]}) and was stopped; "
                          f"raise it with {names[first]}",
            }
        return out
