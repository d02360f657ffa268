"""The warm parent itself: import torch and pypto once, then fork one job leader per request.

It never compiles anything itself: a fork of a process that has compiled hangs, and every compile
grows the process (docs/pypto.md §2). Started by runtime.warm.client as `python -m runtime.warm.parent FD MODE SCRATCH`.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from runtime.fence import cgroup, sandbox
from runtime.fence import hostview
from runtime.warm.leader import supervise_job

LEADER_GRACE_S = 60.0  # on top of the job timeout, before the parent kills a stuck leader
HELD_FDS: set[int] = set()  # the parent's own holds (the daemon's scratch lock): closed in every job leader


def _preload(mode: str) -> dict[str, Any]:
    import numpy.testing  # noqa: F401
    import torch

    if mode == "npu":
        # Before pypto, as NPU scripts do; refuses the test double or the SIM stand-in (runtime/devices/device.py).
        from runtime.devices.device import load_torch_npu

        load_torch_npu()
    import pypto
    import pypto.frontend  # noqa: F401
    from runtime.job import child  # noqa: F401
    from runtime.evidence import graph_verify, instrument, metrics

    info = {"pypto": getattr(pypto, "__version__", "unknown"), "torch": torch.__version__,
            "python": sys.version.split()[0]}
    graph_verify.preload(info)
    return info


@dataclass
class _Running:
    """A job leader the warm parent is waiting for."""
    request_id: Any
    pid: int
    fd: int
    deadline: float
    chunks: list[bytes] = field(default_factory=list)
    cancelled: bool = False


def serve(fd: int, mode: str, scratch: str) -> None:
    """Answer job requests (JSON lines, each with an "id"); several jobs may run at once.

    One select loop watches the client socket and every running leader's report pipe, so a
    client can keep N jobs in flight and replies come back as jobs finish.
    """
    sock = socket.socket(fileno=fd)
    scan = hostview.start_scan()  # alongside the imports, on the other core
    try:
        info = _preload(mode)
        hostview.learn(scan)  # after the imports: their folders are the code jobs run
    except BaseException as exc:  # noqa: BLE001 - tell the client why, then stop
        _send(sock, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    cgroup.sweep()  # job groups of leaders killed before they could clean up
    _send(sock, {"ready": True, "pid": os.getpid(), **info})
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    session(sock)


def _send(sock: socket.socket, obj: dict[str, Any]) -> None:
    sock.sendall(json.dumps(obj).encode() + b"\n")


def session(sock: socket.socket, listener: socket.socket | None = None,
            on_knock: Any = None, received: bytes = b"") -> bool:
    """Serve one client until it quits or goes away. `listener` (the daemon's, runtime/warm/daemon.py)
    is closed in every job leader and watched meanwhile: `on_knock(listener)` answers a second caller.
    True when the client asked the process to shut down (`{"op": "shutdown"}`). `received`: what the
    caller already sent, read before the session began (runtime/warm/daemon.py)."""
    if not hostview.learned():  # else every job leader would walk the host's filesystems itself (~2 s)
        raise RuntimeError("the warm parent serves jobs only after it has learned the host's view")

    def send(obj: dict[str, Any]) -> None:
        _send(sock, obj)

    running: dict[int, _Running] = {}  # by report fd
    buffer = received
    accepting, shutdown = True, False
    while accepting or running:
        timeout = max(0.0, min((j.deadline for j in running.values()), default=time.monotonic() + 3600)
                      - time.monotonic())
        watched = ([sock] if accepting else []) + ([listener] if listener is not None else []) + list(running)
        ready, _, _ = select.select(watched, [], [], 0 if b"\n" in buffer else timeout)
        if listener is not None and listener in ready:
            on_knock(listener)
        for job in [j for j in running.values() if time.monotonic() >= j.deadline]:
            os.kill(job.pid, signal.SIGKILL)  # a leader stuck past its job's timeout and grace
        if sock in ready:
            chunk = sock.recv(1 << 16)
            if not chunk:  # the client is gone: stop its jobs, then exit
                for job in running.values():
                    os.kill(job.pid, signal.SIGKILL)
                accepting = False
            buffer += chunk
        while b"\n" in buffer:  # (also lines received before the session began)
            line, buffer = buffer.split(b"\n", 1)
            request = json.loads(line)
            if request.get("op") in ("quit", "shutdown"):
                accepting, shutdown = False, shutdown or request["op"] == "shutdown"
                continue
            if request.get("op") == "cancel":  # every running job: its leader kills it and reports
                for job in running.values():
                    job.cancelled = True
                    os.kill(job.pid, signal.SIGTERM)
                continue
            job = _start_leader(request, sock, list(running), listener)
            running[job.fd] = job
        for fd_ in [f for f in ready if isinstance(f, int) and f in running]:
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
            if job.cancelled:
                report["cancelled"] = True  # also when SIGTERM came before the leader could catch it
            if accepting:
                send({**report, "id": job.request_id})
    return shutdown


def _start_leader(request: dict[str, Any], sock: socket.socket, others: list[int],
                  listener: socket.socket | None = None) -> _Running:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the job leader
        sandbox.die_with_parent()
        os.close(r)
        sock.close()
        if listener is not None:  # the daemon's door: never within a job's reach
            listener.close()
        for fd in (*others, *HELD_FDS):  # other jobs' report pipes, our holds: never within this job's reach
            os.close(fd)
        try:
            report = supervise_job(request, report_fd=w)
        except BaseException as exc:  # noqa: BLE001 - our own failure: infrastructure, with its traceback
            report = {"leader_error": f"{type(exc).__name__}: {exc}", "leader_traceback": traceback.format_exc()}
        data = json.dumps(report).encode()
        while data:
            data = data[os.write(w, data):]
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + float(request["limits"]["timeout_s"]) + LEADER_GRACE_S
    return _Running(request.get("id"), pid, r, deadline)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
