"""The child processes of `crosscheck up` and `crosscheck worker`: start them in their own process
group, stop them with escalating signals, forward the user's signals."""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

STOP_GRACE_S = 20.0
# Escalation when the user (or a supervisor) insists: Celery reads SIGTERM as a warm shutdown
# (finish the running job) and SIGQUIT as a cold one.
ESCALATION = (signal.SIGTERM, signal.SIGQUIT, signal.SIGKILL)


def start(cmd: list[str], env: dict[str, str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child in a session of its own: a terminal's Ctrl-C reaches only us, and stop() can take
    its whole process tree (Celery's pool processes, their warm parents) down with it."""
    return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, start_new_session=True, **kwargs)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _send(proc: subprocess.Popen[bytes], sig: int) -> bool:
    """Signal the child (SIGKILL: its whole process group); False when it is already gone."""
    if sig == signal.SIGKILL:
        _signal_group(proc.pid, sig)
        return True
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        return False
    return True


def stop(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> int:
    """Stop a child started by start(): SIGTERM, then SIGQUIT, then SIGKILL, each after grace_s;
    finally kill whatever is left of its process group (no orphans)."""
    for sig in ESCALATION:
        if proc.poll() is not None:
            break
        if not _send(proc, sig):
            break
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue
    _signal_group(proc.pid, signal.SIGKILL)
    return proc.wait()


def wait_forwarding_signals(proc: subprocess.Popen[bytes]) -> int:
    """Wait for one child, passing SIGINT/SIGTERM on (escalating on repeats); its exit code."""
    received: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        received.append(signum)
        _send(proc, ESCALATION[min(len(received), len(ESCALATION)) - 1])

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                code = proc.wait()
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                continue
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _signal_group(proc.pid, signal.SIGKILL)  # leftovers of its tree
    if received and code in (0, -signal.SIGTERM, -signal.SIGQUIT, -signal.SIGKILL):
        return 0
    return code if code >= 0 else 128 - code
