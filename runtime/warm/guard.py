"""The job leader's watch over one job's resources: memory, processes and disk.

Memory and processes are the job cgroup's (runtime.fence.cgroup) when the leader could make one; without
it a watchdog polls the job's process tree: its memory (the resident sum, then the proportional set
size when that sum is over the limit) and its threads against the process limit (which RLIMIT_NPROC
of the job uid then also enforces). Disk has no kernel limit to lean on (RLIMIT_FSIZE
caps single files only), so the leader totals the job dir's blocks, and what its private tmpfs dirs
hold, every DISK_POLL_S, less often for a dir of many files.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from runtime.fence import jobview
from runtime.fence.cgroup import JobCgroup
from runtime.fence.sandbox import DEFAULT_PROCESSES

RSS_POLL_S = 0.2
DISK_POLL_S = 1.0
MAX_DISK_ENTRIES = 200_000  # files and dirs under the job dir; more is a flood in itself
PAGE = os.sysconf("SC_PAGE_SIZE")

# How a user raises each limit, unless the caller (e.g. the worker) names its own setting.
LIMIT_FLAGS = {"memory": "--memory GIB", "processes": "--processes N", "disk": "--disk GIB",
               "files": "--disk GIB (one file per 64 KiB of it)"}


def _processes() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, threads, resident pages), from every /proc/<pid>/stat."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            found[int(name)] = (int(fields[1]), int(fields[17]), int(fields[21]))
        except (OSError, ValueError, IndexError):
            continue
    return found


def tree_usage(pid: int) -> tuple[int, int, list[int]]:
    """(resident bytes, threads, pids) of `pid` and all its descendants.

    The resident sum counts shared pages in every process (a fork shares all of its parent's), so
    it is an upper bound: cheap to poll, and exact enough to say a tree is under a limit.
    """
    procs = _processes()
    children: dict[int, list[int]] = {}
    for child, (parent, _threads, _rss) in procs.items():
        children.setdefault(parent, []).append(child)
    rss = threads = 0
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current in procs:
            tree.append(current)
            threads += procs[current][1]
            rss += procs[current][2] * PAGE
        todo.extend(children.get(current, []))
    return rss, threads, tree


def pss_bytes(pids: list[int]) -> int:
    """Proportional set size of the processes: each shared page split among its sharers (exact, dearer)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError, IndexError):
            continue
    return total


def dir_bytes(root: Path, stop_above: int, max_entries: int = MAX_DISK_ENTRIES) -> tuple[int, int]:
    """(bytes allocated, entries) under root, links not followed; stops counting past stop_above or max_entries."""
    total = entries = 0
    todo = [str(root)]
    while todo and total <= stop_above and entries <= max_entries:
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

    def __init__(self, memory_bytes: int, disk_bytes: int, job_dir: Path, cgroup: JobCgroup | None,
                 nproc: int = DEFAULT_PROCESSES, private_dirs: list[str] | None = None, files: int = MAX_DISK_ENTRIES):
        self.memory_bytes = memory_bytes
        self.files = files  # files and folders (runtime.fence.sandbox.Limits.files)
        self.nproc = nproc
        self.peak_threads = 0
        self.disk_bytes = disk_bytes
        self.job_dir = job_dir
        self.private_dirs = list(private_dirs or [])  # its tmpfs dirs (runtime.fence.jobview): on its disk cap too
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
            else:  # no cgroup: the watchdog counts the job's process tree itself
                rss, threads, tree = tree_usage(pid)
                self.peak_threads = max(self.peak_threads, threads)
                if threads >= self.nproc:
                    return self._broke("processes")
                used = pss_bytes(tree) if rss > self.memory_bytes else rss  # the exact figure only when needed
                self.peak_rss = max(self.peak_rss, used)
                if used > self.memory_bytes:
                    return self._broke("memory")
        if now >= self._next_disk:
            used, entries = dir_bytes(self.job_dir, self.disk_bytes, min(self.files, MAX_DISK_ENTRIES))
            used += jobview.disk_used(self.private_dirs)
            entries += jobview.files_used(self.private_dirs)
            # A job dir of many files costs more to total: poll it less often, at most 10% of a core.
            self._next_disk = time.monotonic() + max(DISK_POLL_S, 10 * (time.monotonic() - now))
            if used > self.disk_bytes:
                return self._broke("disk")
            if entries > self.files:  # empty files cost no bytes, only the host filesystem's inodes
                return self._broke("files")
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
                  "disk": f"{self.disk_bytes / 2**30:.2f} GiB", "files": f"{self.files} files and folders"}
        how = {"memory": "its real memory (cgroup)" if self.cgroup else "its process tree's memory (watchdog)",
               "processes": "its processes and threads",
               "disk": "its job dir's and private temp dirs' disk use",
               "files": "the files and folders in its job dir and private temp dirs"}
        out: dict[str, Any] = {
            "memory_limit": f"cgroup v{self.cgroup.version}" if self.cgroup else "rss watchdog",
            "peak_memory_bytes": (self.cgroup.peak_bytes() if self.cgroup else self.peak_rss),
            "peak_processes": self.cgroup.peak_pids() if self.cgroup else self.peak_threads,
        }
        if hit:
            first = hit[0]
            out["resource_limit"] = {
                "limit": first, "all": hit,
                "reason": f"the job hit its {first} limit ({how[first]}, {values[first]}) and was stopped; "
                          f"raise it with {names[first]}",
            }
        return out
