"""The job leader: one per job, forked by the warm parent.

Still privileged, it isolates (namespaces, the job's view of the filesystem), forks the job
process, enforces the wall clock and collects the job's events and exit status.
"""
from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path
from typing import Any

from runtime.fence import events as events_mod
from runtime.evidence import evidence
from runtime.fence import jobview
from runtime.fence import sandbox
from runtime.fence.cgroup import JobCgroup
from runtime.warm.guard import Guard

POLL_S = 0.05
# More is a flood from the kernel: the rest is read and dropped, and the case cannot be accepted.
MAX_EVENT_BYTES = 16 * 1024 * 1024
MAX_EVENTS = 20_000


def supervise_job(request: dict[str, Any], report_fd: int | None = None) -> dict[str, Any]:
    """In the job leader: isolate, fork the job process, enforce the wall clock, collect events.

    `report_fd` is the leader's own pipe to the warm parent: the job process must not hold it, or
    it could write the whole report itself.
    """
    from runtime.job import child

    cancel = _Cancel()
    signal.signal(signal.SIGTERM, cancel.request)  # the warm parent's way to say "stop this job now"
    limits = sandbox.Limits(**request["limits"])
    job_dir = Path(request["job_dir"])
    privileged = os.geteuid() == 0
    uid = sandbox.job_uid(os.getpid()) if privileged and limits.drop_privileges else None
    writable = [Path(d) for d in request["writable_dirs"]]
    # pypto opened its log tree (debug/plog, debug/device-N) at import in the warm parent; the job's
    # log dir is bound over it, so it needs the same subfolders or the plog cannot be written.
    warm_logs, job_logs = Path(request["warm_log_dir"]), Path(request["log_dir"])
    for sub in sorted(p.relative_to(warm_logs) for p in warm_logs.rglob("*") if p.is_dir()):
        (job_logs / sub).mkdir(parents=True, exist_ok=True)
        writable.append(job_logs / sub)
    if uid is not None:
        for d in writable:
            os.chown(d, uid, uid)
    _load_calculator(request.get("graph_verify") or {})
    log_binds = {warm_logs: job_logs}
    sink = evidence.open_sink(request)  # before isolating: the evidence dir may be hidden after
    cache = (request.get("graph_verify") or {}).get("cache_dir")
    expose = [warm_logs.parent, *([Path(cache)] if cache else [])]
    hide = [Path(p) for p in request.get("hide_paths") or []]
    iso = sandbox.isolate(job_dir, log_binds, limits, expose, hide)
    if uid is not None and not iso.mount_namespace:
        iso.notes.append("no mount namespace: the job keeps the warm parent's uid")
        uid = None
    iso.uid = uid
    cgroup, why = (JobCgroup.create(f"job-{os.getpid()}-{time.monotonic_ns()}", limits.memory_bytes, limits.nproc)
                   if privileged else (None, "not root: no job cgroup; memory is watched by polling RSS"))
    if why:
        iso.notes.append(why)
    guard = Guard(limits.memory_bytes, limits.disk_bytes, job_dir, cgroup, limits.nproc, iso.private_dirs, limits.files)
    # Root mounts it or the job does not start; without root (a user namespace) it is tried, not claimed.
    iso.fresh_proc = privileged and iso.pid_namespace and iso.mount_namespace
    iso.memory_limit = f"cgroup v{cgroup.version}" if cgroup else "rss watchdog"
    ev_r, ev_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the job process
        os.close(ev_r)
        ev_w = sandbox.park_event_fd(ev_w)  # first: no fd opened later takes the number the filter guards
        if sink is not None:
            sink.close()  # the job never holds a handle on the harness's evidence folder
        if report_fd is not None:
            os.close(report_fd)
        try:
            if cgroup is not None:
                cgroup.join()  # first: everything the job starts is inside its limits
            os.setpgid(0, 0)
            if iso.fresh_proc:
                jobview.fresh_proc()  # as pid 1 of its PID namespace, still privileged
            elif iso.pid_namespace and iso.mount_namespace:
                _try_fresh_proc()
            _redirect_output(request)
            unfiltered = sandbox.enter(limits, uid, sandbox.device_groups() if request["mode"] == "npu" else [],
                                       in_cgroup=cgroup is not None, event_fd=ev_w)
            if unfiltered:
                events_mod.Events(ev_w).emit("sandbox_note", note=unfiltered)
            sandbox.die_with_parent()  # after the uid change, which clears the setting
        except BaseException as exc:  # noqa: BLE001
            events_mod.Events(ev_w).emit("internal_error", error={"type": type(exc).__name__,
                                                                  "message": f"sandbox setup failed: {exc}"})
            os._exit(71)
        child.main(request, ev_w)
    os.close(ev_w)
    raw, status, rusage, timed_out = _watch(pid, ev_r, start + limits.timeout_s, guard, cancel)
    wall = time.monotonic() - start
    if not iso.pid_namespace:
        try:
            os.killpg(pid, signal.SIGKILL)  # the job's leftovers, if any
        except OSError:
            pass
    usage = guard.report(limits.nproc, request.get("limit_flags"))
    if cgroup is not None:
        cgroup.remove()  # kills any stray left outside the PID namespace first
    events = events_mod.parse(raw[:MAX_EVENT_BYTES], MAX_EVENTS)
    flood = len(raw) > MAX_EVENT_BYTES or len(events) > MAX_EVENTS
    events = events[:MAX_EVENTS]
    iso.notes += [str(e.get("note"))[:300] for e in events if e.get("event") == "sandbox_note"][:1]
    found = evidence.collect(request, events, uid, pid, iso.mount_namespace, sink)
    if flood:
        found["events_truncated"] = (f"the job sent more than {MAX_EVENT_BYTES // 2**20} MiB or {MAX_EVENTS} events; "
                                     "the rest was dropped")
    if sink is not None:
        sink.close()
    return {
        "events": events,
        "evidence": found,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "cancelled": cancel.requested,
        "wall_s": round(wall, 4),
        "maxrss_kb": rusage.ru_maxrss if rusage else 0,
        "pid": pid,
        "isolation": iso.as_dict(),
        **usage,
    }


def _try_fresh_proc() -> None:
    try:
        jobview.fresh_proc()
    except OSError:
        pass  # e.g. a container whose /proc has masked paths: the job keeps the view it has


def _load_calculator(cfg: dict[str, Any]) -> None:
    """Load the cached calculator before the job starts; never build it here (~60 s)."""
    from runtime.evidence import calculator

    if not cfg.get("enabled"):
        return
    cache = cfg.get("cache_dir")
    ready, note = calculator.status(Path(cache) if cache else None)
    if not ready:
        cfg["calculator_note"] = note
        return
    try:
        calculator.load(Path(note))
    except OSError as exc:
        cfg["calculator_note"] = f"loading the calculator failed: {exc}"


def _redirect_output(request: dict[str, Any]) -> None:
    # Files, not pipes: a pipe held open by an escaped grandchild can hang the harness.
    for fd, key in ((1, "stdout_path"), (2, "stderr_path")):
        target = os.open(request[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.fchmod(target, 0o644)  # not the worker's umask: the harness reads it back as the job's uid
        os.dup2(target, fd)
        os.close(target)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)


class _Cancel:
    """Set by SIGTERM; the watch loop sees it within POLL_S."""

    def __init__(self) -> None:
        self.requested = False

    def request(self, _signum: int, _frame: object) -> None:
        self.requested = True


def _watch(pid: int, ev_r: int, deadline: float, guard: Guard, cancel: _Cancel) -> tuple[bytes, int, Any, bool]:
    """Read events until the job exits, breaks a limit, is cancelled or the deadline passes (then kill it).

    Keeps at most MAX_EVENT_BYTES (+1 to tell a flood): the job controls how much it sends.
    """
    chunks: list[bytes] = []
    timed_out = False
    status, rusage = 0, None
    os.set_blocking(ev_r, False)
    while True:
        done, status, rusage = _try_wait(pid)
        _drain(ev_r, chunks)
        if done:
            break
        broke = None if cancel.requested else guard.check(pid)
        timed_out = broke is None and not cancel.requested and time.monotonic() >= deadline
        if broke or timed_out or cancel.requested:
            _kill_job(pid, guard)
            _, status, rusage = os.wait4(pid, 0)
            _drain(ev_r, chunks)
            break
        select.select([ev_r], [], [], POLL_S)
    os.close(ev_r)
    return b"".join(chunks), status, rusage, timed_out


def _kill_job(pid: int, guard: Guard) -> None:
    """The job process, and with it its PID namespace; its cgroup's members too, if it has no namespace."""
    os.kill(pid, signal.SIGKILL)
    if guard.cgroup is not None:
        guard.cgroup.kill()


def _try_wait(pid: int) -> tuple[bool, int, Any]:
    wpid, status, rusage = os.wait4(pid, os.WNOHANG)
    return wpid == pid, status, rusage


def _drain(fd: int, chunks: list[bytes]) -> None:
    kept = sum(len(c) for c in chunks)
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            return
        if kept <= MAX_EVENT_BYTES:
            chunks.append(chunk[:MAX_EVENT_BYTES + 1 - kept])
            kept += len(chunks[-1])
