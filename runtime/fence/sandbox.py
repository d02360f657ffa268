"""Process isolation for one job: namespaces, limits and an unprivileged uid (Linux).

The job leader (a fork of the warm parent) calls `isolate()` while still privileged, then forks
the job process, which calls `enter()` to take its limits and drop to the job uid.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.fence import jobview, syscalls
from runtime.fence.jobview import (  # the mount flags, defined once (runtime.fence.jobview)
    CLONE_NEWNS, MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_RDONLY, MS_REC)

CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1

# Processes and threads per job: pypto's compile and graph verify of one model kernel run 150-240 tasks at
# once idle, over 512 under load (docs/SECURITY.md, "Processes"); still a fork bomb's ceiling.
DEFAULT_PROCESSES = 4096

# Files and folders a job may make (its job dir and private temp dirs together): one per 64 KiB of its disk cap, so
# empty files cannot exhaust the host filesystem's inodes while the byte cap sees nothing (docs/SECURITY.md).
BYTES_PER_FILE = 64 * 1024
MIN_FILES = 4096

# Job uids: one per concurrent job (RLIMIT_NPROC counts a uid's processes machine-wide).
JOB_UID_BASE = 200_000
JOB_UID_RANGE = 50_000

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Limits:
    timeout_s: float = 300.0
    # The job's real memory as a whole: its cgroup's limit, or its process tree's RSS when no cgroup
    # can be made (runtime.fence.cgroup, runtime.warm.guard). Never an address-space limit: pypto's threads
    # reserve gigabytes they never touch. Import of torch+pypto alone is ~700 MiB, shared with the parent.
    memory_bytes: int = 8 * 1024**3
    file_bytes: int = 2 * 1024**3  # one file (RLIMIT_FSIZE)
    disk_bytes: int = 4 * 1024**3  # the whole job dir
    tmp_bytes: int = 512 * 1024**2  # each of the job's private tmpfs dirs (/tmp, /run/lock ...: runtime.fence.jobview)
    nproc: int = DEFAULT_PROCESSES  # processes and threads, the job cgroup's pids.max (else RLIMIT_NPROC of the job uid)
    isolate_network: bool = True
    drop_privileges: bool = True
    nice: int = 0  # the job's CPU niceness, among its own scheduling group only (docs/platform.md §5)

    @property
    def files(self) -> int:
        """Files and folders the job may hold, from its disk cap (BYTES_PER_FILE)."""
        return max(MIN_FILES, self.disk_bytes // BYTES_PER_FILE)


@dataclass
class Isolation:
    """What the sandbox achieved for a job, reported in the environment section."""
    network: bool = False
    pid_namespace: bool = False
    ipc_namespace: bool = False  # no SysV or POSIX IPC shared with the host or other jobs
    fresh_proc: bool = False  # a /proc of the job's own PID namespace
    mount_namespace: bool = False
    uid: int | None = None
    memory_limit: str = ""  # "cgroup v1" | "cgroup v2" | "rss watchdog"
    private_tmp: bool = False  # its own size-capped tmpfs over every world-writable dir of the host
    private_dirs: list[str] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)  # world-writable files and sockets made unusable
    narrowed: list[str] = field(default_factory=list)  # dirs holding only what it needs (start dir, jobs dir)
    hidden: list[str] = field(default_factory=list)  # host paths covered in its mount namespace
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"network_isolated": self.network, "pid_namespace": self.pid_namespace,
                "ipc_namespace": self.ipc_namespace, "fresh_proc": self.fresh_proc,
                "mount_namespace": self.mount_namespace, "uid": self.uid, "memory_limit": self.memory_limit,
                "private_tmp": self.private_tmp, "private_dirs": self.private_dirs, "covered": self.covered,
                "narrowed": self.narrowed, "hidden": self.hidden, "notes": self.notes}


_mount = jobview.mount


def job_uid(leader_pid: int) -> int:
    return JOB_UID_BASE + leader_pid % JOB_UID_RANGE


def isolate(job_dir: Path, log_binds: dict[Path, Path], limits: Limits, expose: list[Path] | None = None,
            hide: list[Path] | None = None) -> Isolation:
    """In the job leader: new namespaces and the job's view of the filesystem (runtime.fence.jobview). Best effort.

    `expose` are paths the job needs that may lie under /tmp (the warm parent's scratch dir);
    `hide` are host paths the job must not see at all (a service's data dir, docs/SECURITY.md).
    """
    iso = Isolation()
    privileged = os.geteuid() == 0
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (CLONE_NEWNET if limits.isolate_network else 0)
    if not privileged:
        flags |= CLONE_NEWUSER
        uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        iso.notes.append(f"namespaces unavailable ({os.strerror(ctypes.get_errno())}); "
                         "job runs without network/pid/ipc isolation")
        return iso
    if not privileged:
        _write_id_maps(uid, gid)
    iso.network = limits.isolate_network
    iso.pid_namespace = iso.ipc_namespace = True
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        iso.mount_namespace = True
        view = jobview.View()
        needed = jobview.needed_paths(job_dir, expose or [])
        jobview.private_ipc_mounts(iso.notes)
        iso.private_tmp = jobview.private_dirs(view, min(limits.tmp_bytes, limits.disk_bytes), needed, job_dir,
                                               iso.notes, limits.files)
        jobview.cover_writable_files(view, iso.notes)
        iso.hidden = _hide(hide or [], job_dir, iso.notes)
        for target, source in log_binds.items():
            target.mkdir(parents=True, exist_ok=True)
            _mount(str(source), str(target), None, MS_BIND)
        jobview.narrow(view, job_dir, needed, privileged and limits.drop_privileges, iso.notes)
        iso.private_dirs, iso.covered, iso.narrowed = view.private_dirs, view.covered, view.narrowed
    except OSError as exc:
        iso.notes.append(f"mount setup failed: {exc}")
    return iso


def _hide(paths: list[Path], job_dir: Path, notes: list[str]) -> list[str]:
    """Cover each path with an empty read-only tmpfs (a file with /dev/null): the job sees nothing there."""
    hidden = []
    for path in jobview.outermost([p.resolve() for p in paths]):
        if job_dir.resolve().is_relative_to(path):
            notes.append(f"not hidden: {path} holds the job dir")
            continue
        try:
            if path.is_dir():
                _mount("tmpfs", str(path), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       "mode=000,size=4k")
            elif path.exists():
                _mount("/dev/null", str(path), None, MS_BIND)
            hidden.append(str(path))  # a path that is gone from the job's view counts as hidden too
        except OSError as exc:
            notes.append(f"not hidden: {path}: {exc}")
    return hidden


def _write_id_maps(uid: int, gid: int) -> None:
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def device_groups() -> list[int]:
    """Groups owning the NPU device files (e.g. HwHiAiUser): an NPU job keeps them after the uid drop."""
    import glob

    gids = set()
    for dev in glob.glob("/dev/davinci*") + glob.glob("/dev/devmm_svm") + glob.glob("/dev/hisi_hdc"):
        try:
            gids.add(os.stat(dev).st_gid)
        except OSError:
            continue
    return sorted(g for g in gids if g != 0)


EVENT_FD_CEILING = 4096  # the job's event pipe's fd number, and the job's fd limit below it


def park_event_fd(fd: int) -> int:
    """In the job process: its event pipe moved to the highest fd number it may hold, and its fd limit (soft and
    hard) set just below that number. No fd the job or a process it starts opens can then take that number: the
    syscall filter's rules on the pipe's fd (runtime.fence.syscalls) never touch another fd (a compiler's own pipe
    that got the same number could not be closed, and g++ hung), and nothing can be dup2'ed onto it. Returns
    the new number (close-on-exec: programs the job runs never hold it)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    number = EVENT_FD_CEILING if hard == resource.RLIM_INFINITY else min(EVENT_FD_CEILING, hard - 1)
    if number <= fd:
        return fd
    os.dup2(fd, number, inheritable=False)
    os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (number, number))
    return number


def enter(limits: Limits, uid: int | None, groups: list[int] | None = None, in_cgroup: bool = False,
          event_fd: int | None = None) -> str:
    """In the job process: resource limits, the unprivileged uid, the syscall filter. Irreversible.
    Returns '' or why the syscall filter could not be loaded (for the sandbox notes).

    In a job cgroup, its pids.max is the process limit, and RLIMIT_NPROC only a loose backstop: the
    cgroup then is what refuses the fork, and it records that, so the job gets a resource_limit verdict.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.nice > 0:
        os.nice(limits.nice)
    # No RLIMIT_AS: memory is limited as a whole, by the job's cgroup or the leader's watchdog.
    file_bytes = min(limits.file_bytes, limits.disk_bytes)
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    cpu = int(limits.timeout_s * 2) + 30  # a backstop; the wall clock timeout is the real limit
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    if uid is not None:
        nproc = limits.nproc * 2 if in_cgroup else limits.nproc
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        os.setgroups(list(groups or []))
        os.setgid(uid)
        os.setuid(uid)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    return syscalls.load(_libc, event_fd)  # no user namespaces, no keyrings, the event pipe kept (runtime.fence.syscalls)


def die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (no orphaned leaders or jobs).

    Not for the warm parent itself: the setting follows the parent *thread*, and clients may
    start the warm parent from a short-lived thread. It watches its socket instead.
    """
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
