"""The warm parent: a process that imported torch and pypto once and forks one job per request.

A cold `python kernel.py --run_mode sim` spends 3.5-5 s importing torch and pypto; a fork of this
process starts with both loaded. The parent never compiles anything itself (a process that has
compiled leaks memory and state into every fork).

Per request:  warm parent --fork--> job leader (privileged; namespaces, timeout, rusage)
                                        --fork--> job process (limits, job uid, runs the case)
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from importlib import util as importlib_util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from runtime import events as events_mod
from runtime import sandbox
from runtime.jobenv import write_sim_config

READY_TIMEOUT_S = 180.0
LEADER_GRACE_S = 60.0  # on top of the job timeout, before the parent kills a stuck leader
POLL_S = 0.05


class WarmParentError(RuntimeError):
    """The warm parent could not start or stopped answering (our infrastructure, not the kernel)."""


def _pypto_lib_dir() -> Path:
    spec = importlib_util.find_spec("pypto")
    if spec is None or not spec.submodule_search_locations:
        raise WarmParentError("pypto is not installed in this Python")
    return Path(list(spec.submodule_search_locations)[0]) / "lib"


class WarmParent:
    """Client side: start the warm parent and send it jobs, one at a time."""

    def __init__(self, mode: str = "sim", scratch: Path | None = None):
        self.mode = mode
        self._own_scratch = scratch is None
        self.scratch = Path(scratch) if scratch else Path(tempfile.mkdtemp(prefix="crosscheck-warm-"))
        self.scratch.chmod(0o755)
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self._reader: Any = None
        self._next_id = 0
        self.info: dict[str, Any] = {}

    @property
    def config_path(self) -> Path:
        return self.scratch / "tile_fwk_config.json"

    @property
    def log_dir(self) -> Path:
        return self.scratch / "logs"

    def start(self) -> dict[str, Any]:
        if self.proc is not None:
            return self.info
        write_sim_config(_pypto_lib_dir(), self.config_path)
        for sub in ("home", "logs", "output"):
            (self.scratch / sub).mkdir(exist_ok=True)
        ours, theirs = socket.socketpair()
        env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH" or self.mode == "npu"}
        env.update({
            "HOME": str(self.scratch / "home"),
            "PYPTO_HOME": str(self.scratch / "home" / ".pypto"),
            "ASCEND_PROCESS_LOG_PATH": str(self.log_dir),
            "TILE_FWK_OUTPUT_DIR": str(self.scratch / "output"),
            "TILEFWK_CONFIG_PATH": str(self.config_path),
            "OMP_NUM_THREADS": "1",
        })
        log = open(self.scratch / "warm-parent.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runtime.zygote", str(theirs.fileno()), self.mode, str(self.scratch)],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
        theirs.close()
        log.close()
        self.sock = ours
        self._reader = ours.makefile("rb")
        ready, _, _ = select.select([ours], [], [], READY_TIMEOUT_S)
        if not ready:
            self.close()
            raise WarmParentError(f"warm parent did not start within {READY_TIMEOUT_S:.0f} s")
        self.info = self._receive()
        if not self.info.get("ready"):
            detail = self.info.get("error", "no answer")
            self.close()
            raise WarmParentError(f"warm parent failed to start: {detail}")
        return self.info

    def _receive(self) -> dict[str, Any]:
        line = self._reader.readline()
        if not line:
            tail = ""
            try:
                tail = (self.scratch / "warm-parent.log").read_text(errors="replace")[-2000:]
            except OSError:
                pass
            raise WarmParentError(f"warm parent exited unexpectedly. Log tail:\n{tail}")
        return json.loads(line)

    def run_job(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one job; returns the leader's report (events, exit status, timings)."""
        return next(self.run_jobs([request], parallel=1))[1]

    def run_jobs(self, requests: list[dict[str, Any]], parallel: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run jobs with up to `parallel` at once; yields (index, report) as each finishes.

        Stop iterating early (break) to send no further jobs; the ones in flight are awaited on
        the next call, never mixed up (replies carry their request's id).
        """
        self.start()
        assert self.sock is not None
        pending = list(enumerate(requests))
        in_flight: dict[int, int] = {}
        try:
            while pending or in_flight:
                while pending and len(in_flight) < max(1, parallel):
                    index, request = pending.pop(0)
                    self._next_id += 1
                    in_flight[self._next_id] = index
                    body = {**request, "id": self._next_id, "warm_log_dir": str(self.log_dir)}
                    self.sock.sendall(json.dumps(body).encode() + b"\n")
                reply = self._receive()
                index = in_flight.pop(reply.pop("id"))
                yield index, reply
        finally:
            while in_flight:  # a caller that stopped early: drain what is still running
                in_flight.pop(self._receive().pop("id"), None)

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.sendall(b'{"op": "quit"}\n')
            except OSError:
                pass
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self._own_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> "WarmParent":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- server side (the warm parent)

def _preload(mode: str) -> dict[str, Any]:
    import numpy.testing  # noqa: F401
    import torch

    import pypto
    import pypto.frontend  # noqa: F401
    from runtime import child, graph_verify, instrument, metrics  # noqa: F401

    if mode == "npu":
        import torch_npu  # noqa: F401
    info = {"pypto": getattr(pypto, "__version__", "unknown"), "torch": torch.__version__,
            "python": sys.version.split()[0]}
    graph_verify.preload(info)
    return info


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (no orphaned leaders or jobs).

    Not for the warm parent itself: the setting follows the parent *thread*, and clients may
    start the warm parent from a short-lived thread. It watches its socket instead.
    """
    sandbox._libc.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass
class _Running:
    """A job leader the warm parent is waiting for."""
    request_id: Any
    pid: int
    fd: int
    deadline: float
    chunks: list[bytes] = field(default_factory=list)


def serve(fd: int, mode: str, scratch: str) -> None:
    """Answer job requests (JSON lines, each with an "id"); several jobs may run at once.

    One select loop watches the client socket and every running leader's report pipe, so a
    client can keep N jobs in flight and replies come back as jobs finish.
    """
    sock = socket.socket(fileno=fd)

    def send(obj: dict[str, Any]) -> None:
        sock.sendall(json.dumps(obj).encode() + b"\n")

    try:
        info = _preload(mode)
    except BaseException as exc:  # noqa: BLE001 - tell the client why, then stop
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    send({"ready": True, "pid": os.getpid(), **info})
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    running: dict[int, _Running] = {}  # by report fd
    buffer = b""
    accepting = True
    while accepting or running:
        timeout = max(0.0, min((j.deadline for j in running.values()), default=time.monotonic() + 3600)
                      - time.monotonic())
        ready, _, _ = select.select(([sock] if accepting else []) + list(running), [], [], timeout)
        for job in [j for j in running.values() if time.monotonic() >= j.deadline]:
            os.kill(job.pid, signal.SIGKILL)  # a leader stuck past its job's timeout and grace
        if sock in ready:
            chunk = sock.recv(1 << 16)
            if not chunk:  # the client is gone: stop its jobs, then exit
                for job in running.values():
                    os.kill(job.pid, signal.SIGKILL)
                accepting = False
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                if request.get("op") == "quit":
                    accepting = False
                    continue
                job = _start_leader(request, sock)
                running[job.fd] = job
        for fd_ in [f for f in ready if isinstance(f, int)]:
            job = running[fd_]
            chunk = os.read(fd_, 1 << 16)
            if chunk:
                job.chunks.append(chunk)
                continue
            os.close(fd_)
            os.waitpid(job.pid, 0)
            del running[fd_]
            try:
                report = json.loads(b"".join(job.chunks))
            except ValueError:
                report = {"leader_error": "job leader died without a report"}
            if accepting:
                send({**report, "id": job.request_id})


def _start_leader(request: dict[str, Any], sock: socket.socket) -> _Running:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the job leader
        _die_with_parent()
        os.close(r)
        sock.close()
        try:
            report = lead(request)
        except BaseException as exc:  # noqa: BLE001
            report = {"leader_error": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(report).encode()
        while data:
            data = data[os.write(w, data):]
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + float(request["limits"]["timeout_s"]) + LEADER_GRACE_S
    return _Running(request.get("id"), pid, r, deadline)


def lead(request: dict[str, Any]) -> dict[str, Any]:
    """In the job leader: isolate, fork the job process, enforce the wall clock, collect events."""
    from runtime import child

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
    iso = sandbox.isolate(job_dir, log_binds, limits)
    if uid is not None and not iso.mount_namespace:
        iso.notes.append("no mount namespace: the job keeps the warm parent's uid")
        uid = None
    iso.uid = uid
    ev_r, ev_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the job process
        os.close(ev_r)
        try:
            os.setpgid(0, 0)
            _redirect_output(request)
            sandbox.enter(limits, uid, sandbox.device_groups() if request["mode"] == "npu" else [])
            _die_with_parent()  # after the uid change, which clears the setting
        except BaseException as exc:  # noqa: BLE001
            events_mod.Events(ev_w).emit("internal_error", error={"type": type(exc).__name__,
                                                                  "message": f"sandbox setup failed: {exc}"})
            os._exit(71)
        child.main(request, ev_w)
    os.close(ev_w)
    raw, status, rusage, timed_out = _watch(pid, ev_r, start + limits.timeout_s)
    wall = time.monotonic() - start
    if not iso.pid_namespace:
        try:
            os.killpg(pid, signal.SIGKILL)  # the job's leftovers, if any
        except OSError:
            pass
    return {
        "events": events_mod.parse(raw),
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "wall_s": round(wall, 4),
        "maxrss_kb": rusage.ru_maxrss if rusage else 0,
        "pid": pid,
        "isolation": iso.as_dict(),
    }


def _load_calculator(cfg: dict[str, Any]) -> None:
    """Load the cached calculator before the job starts; never build it here (~60 s)."""
    from runtime import calculator

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
        os.dup2(target, fd)
        os.close(target)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)


def _watch(pid: int, ev_r: int, deadline: float) -> tuple[bytes, int, Any, bool]:
    """Read events until the job exits or the deadline passes (then kill it)."""
    chunks: list[bytes] = []
    timed_out = False
    status, rusage = 0, None
    os.set_blocking(ev_r, False)
    while True:
        done, status, rusage = _try_wait(pid)
        _drain(ev_r, chunks)
        if done:
            break
        if time.monotonic() >= deadline:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            _, status, rusage = os.wait4(pid, 0)
            _drain(ev_r, chunks)
            break
        select.select([ev_r], [], [], POLL_S)
    os.close(ev_r)
    return b"".join(chunks), status, rusage, timed_out


def _try_wait(pid: int) -> tuple[bool, int, Any]:
    wpid, status, rusage = os.wait4(pid, os.WNOHANG)
    return wpid == pid, status, rusage


def _drain(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            return
        chunks.append(chunk)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
