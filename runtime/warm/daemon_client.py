"""The client side of the run daemon (docs/run-daemon.md): find it through its socket in the cache
dir, start it when there is none, replace it when its digest is not ours.

`DaemonParent` is a WarmParent whose parent outlives the run: `close()` ends this run's session and
leaves the daemon waiting for the next run until its idle timeout. Jobs are the same requests to the
same leader code, so the sandbox and the verdicts are those of a private warm parent.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runtime.fence.jobenv import write_sim_config
from runtime.fence.scratch import hold_shared, release_shared
from runtime.warm import daemon_address
from runtime.warm.client import BOOT, CODE_ROOT, READY_TIMEOUT_S, WarmParent, WarmParentError, _pypto_lib_dir

IDLE_S = 900.0  # a daemon with no run for this long exits (CROSSCHECK_DAEMON_IDLE_S overrides)
NO_DAEMON_ENV = daemon_address.NO_DAEMON_ENV
DAEMON_MODULE = "runtime.cli.run_daemon"


def idle_s() -> float:
    try:
        return max(1.0, float(os.environ.get("CROSSCHECK_DAEMON_IDLE_S", IDLE_S)))
    except ValueError:
        return IDLE_S


def socket_dir(cache_dir: Path) -> Path:
    try:
        return daemon_address.socket_dir(cache_dir)
    except daemon_address.DaemonPlaceError as exc:
        raise WarmParentError(str(exc)) from None


def _own_dir(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    if path.stat().st_uid != os.getuid() or path.is_symlink():
        raise WarmParentError(f"{path} belongs to another user: not using a run daemon there")
    path.chmod(0o755)  # the job's uid reads the config and writes logs there, as with a private parent
    return path


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


class DaemonParent(WarmParent):
    """A warm parent shared between runs on this host (see the module docstring)."""

    runs_scripts = False  # its simulator config silences the files a script may read (docs/run-daemon.md)

    def __init__(self, mode: str, cache_dir: Path, digest: str | None = None):
        self.mode = mode
        self.digest = digest or self.source_digest()
        dir_ = socket_dir(cache_dir)
        # The daemon's scratch (its config, logs, HOME) is known before it answers: jobs are built first. One
        # per socket dir: two cache dirs are two daemons, and one's exit must not remove the other's scratch.
        where = hashlib.sha256(str(dir_).encode()).hexdigest()[:8]
        scratch = Path(tempfile.gettempdir()) / f"crosscheck-daemon-{os.getuid()}-{mode}-{self.digest}-{where}"
        # Held (a shared lock) by this run and by the daemon: the last to let go removes it, and one killed
        # leaves it to the sweep of the next warm parent's start (runtime/fence/scratch.py).
        self._hold: int | None = hold_shared(scratch, _own_dir)
        super().__init__(mode, scratch=scratch)
        self.dir = dir_
        self.path: Path | None = self.dir / daemon_address.socket_name(mode)
        self._start_lock = self.path.with_suffix(".lock")

    def source_digest(self) -> str:
        return daemon_address.source_digest(self.mode)

    def start(self) -> dict[str, Any]:
        if self.sock is not None:
            return self.info
        with open(self._start_lock, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one run starts the daemon; the others wait for it
            hello = self._connect()
            if hello is not None and hello.get("ready") and hello.get("digest") != self.digest:
                self._send(b'{"op": "shutdown"}\n')  # our code, pypto or torch changed: replace it
                self._drop()
                self._wait_gone(int(hello.get("pid") or 0))
                hello = None
            if hello is None:
                daemon_pid = self._spawn()
                hello = self._connect(wait_s=READY_TIMEOUT_S, while_alive=daemon_pid)
                if hello is None:  # it died or never answered: this run goes on without it
                    sys.stderr.write(f"note: the run daemon did not start (its log: {self.scratch / 'warm-parent.log'});"
                                     " running without it\n")
                    return self._private()
        if not hello.get("ready"):
            self._drop()
            if hello.get("busy"):  # another run is using it: a private parent
                return self._private()
            raise WarmParentError(f"the run daemon did not answer: {hello.get('error', 'no answer')}")
        self.info = hello
        return self.info

    def _private(self) -> dict[str, Any]:
        """A private warm parent for this run, on the same scratch (the same config the jobs name)."""
        self.path = None
        return WarmParent.start(self)

    def _connect(self, wait_s: float = 0.0, while_alive: int = 0) -> dict[str, Any] | None:
        """The daemon's hello; None when nothing answers within wait_s (or the process `while_alive` is gone)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(self.path))
                break
            except OSError:
                sock.close()
                if time.monotonic() >= deadline or (while_alive and not _alive(while_alive)):
                    return None
                time.sleep(0.1)
        self.sock = sock
        self._reader = sock.makefile("rb")
        sock.settimeout(READY_TIMEOUT_S)
        try:
            line = self._reader.readline()
        except OSError:
            line = b""
        sock.settimeout(None)
        if not line:
            self._drop()
            return None
        return json.loads(line)

    def _spawn(self) -> int:
        """Start the daemon; its pid."""
        write_sim_config(_pypto_lib_dir(), self.config_path)
        for sub in ("home", "logs", "output"):
            (self.scratch / sub).mkdir(exist_ok=True)
        self.scratch.chmod(0o755)
        # Started as a private warm parent is (-P: nothing of the starting dir on its sys.path); the entry is
        # the CLI's, which hands whole runs to it (runtime/cli/run_daemon.py).
        argv = [sys.executable, "-P", "-c", BOOT, str(CODE_ROOT), DAEMON_MODULE, str(self.path), self.mode,
                str(self.scratch), self.digest, str(idle_s())]
        env = self.environment()
        log = os.open(self.scratch / "warm-parent.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        read_end, write_end = os.pipe()
        pid = os.fork()  # twice: the daemon is nobody's child here, in its own session (no Ctrl-C from our terminal)
        if pid == 0:
            try:
                os.close(read_end)
                os.setsid()
                daemon = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                          close_fds=True)
                os.write(write_end, str(daemon.pid).encode())
            finally:
                os._exit(0)
        os.close(log)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            started = pipe.read()
        os.waitpid(pid, 0)
        return int(started or 0)

    @staticmethod
    def _wait_gone(pid: int) -> None:
        for _ in range(300):
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.05)

    def _drop(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self._reader = None, None

    def close(self) -> None:
        if self.path is None:  # fell back to a private parent
            WarmParent.close(self)
        else:
            _end_session(self)
        if self._hold is not None:  # removed here when no daemon holds it (one that died at start, say)
            release_shared(self.scratch, self._hold)
            self._hold = None


class HandedParent(WarmParent):
    """The run daemon's warm parent as seen from a run it was handed whole (runtime/cli/run_daemon.py):
    the session is open on `sock` from the start; close() ends it and the daemon stays."""

    runs_scripts = False  # as DaemonParent

    def __init__(self, mode: str, scratch: Path, sock: socket.socket, info: dict[str, Any]):
        super().__init__(mode, scratch=scratch)
        self.sock, self._reader, self.info = sock, sock.makefile("rb"), info

    def start(self) -> dict[str, Any]:
        if self.sock is None:
            raise WarmParentError("the run daemon's session is closed")
        return self.info

    def close(self) -> None:
        _end_session(self)


def _end_session(parent: WarmParent) -> None:
    if parent.sock is not None:
        try:
            parent._send(b'{"op": "quit"}\n')  # this run's session ends; the daemon stays
            parent.sock.settimeout(30)
            while parent.sock.recv(1 << 16):  # until it closes our session: free for the next run
                pass
        except OSError:
            pass
        parent.sock.close()
    parent.sock, parent._reader = None, None
