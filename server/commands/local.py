"""Helpers shared by the local commands (up, worker, submit): tokens.json and child processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from server.config import DEFAULT_DATA_DIR

TOKENS_FILE = "tokens.json"
PRIVATE_UMASK = 0o077  # what the service writes in its data dir: readable by its own user only
DATA_FILES = ("crosscheck.db", "broker.db")
STOP_GRACE_S = 20.0
# Escalation when the user (or a supervisor) insists: Celery reads SIGTERM as a warm shutdown
# (finish the running job) and SIGQUIT as a cold one.
ESCALATION = (signal.SIGTERM, signal.SIGQUIT, signal.SIGKILL)


def data_dir_from_env(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("DATA_DIR") or env.get("data_dir") or DEFAULT_DATA_DIR)


def read_tokens(data_dir: Path) -> dict[str, str]:
    """The secrets `crosscheck up` stored ({"admin": ..., "worker": ...}); {} when there are none."""
    try:
        data = json.loads((Path(data_dir) / TOKENS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def write_tokens(data_dir: Path, tokens: dict[str, str]) -> Path:
    """Write the secrets readable by this user only (0600, also when the file already existed)."""
    path = Path(data_dir) / TOKENS_FILE
    tmp = path.with_name(TOKENS_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(tokens, f, indent=2)
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path


def make_private(data_dir: Path) -> Path:
    """The data dir 0700 and everything in it 0700 (folders) or 0600 (files), links left alone.

    Jobs run code that strangers upload (docs/SECURITY.md): the database, the broker, bundles and
    tokens must not be readable by any other uid, including the sandboxed job's. The database
    files are created here, empty, so that SQLite's own files (-wal, -shm) inherit 0600 too.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in DATA_FILES:
        os.close(os.open(data_dir / name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    for root, dirs, files in os.walk(data_dir):
        os.chmod(root, 0o700, follow_symlinks=False)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o600, follow_symlinks=False)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return data_dir


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
