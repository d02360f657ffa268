"""The run daemon: a warm parent kept alive between `crosscheck run` invocations (docs/run-daemon.md).

Started by the first run (runtime/warm/daemon_client.py) as
`python -m runtime.warm.daemon SOCKET MODE SCRATCH DIGEST IDLE_S`; it imports torch and pypto once,
listens on SOCKET (in a 0700 directory of the user's cache dir), serves one run at a time with the
warm parent's own loop (runtime/warm/parent.py `session`), and exits after IDLE_S seconds without a
run, or when a run asks it to (its DIGEST no longer matches our code, pypto or torch).

A caller either sends job requests itself (runtime/warm/daemon_client.py) or hands its whole run over
(`{"op": "run"}` with its stdin, stdout and stderr): the daemon then forks a run process that does what
`crosscheck run` would (`on_run`, runtime/cli/run_daemon.py) and serves that process's jobs as any caller's.
Job leaders are always forks of the daemon itself, never of a run process.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.fence import cgroup, hostview
from runtime.fence.scratch import hold_shared, release_shared
from runtime.warm.parent import HELD_FDS, _preload, _send, session

DOOR_CHECK_S = 30.0  # while idle, this often it checks that its socket is still there and still its own
MAX_FIRST_LINE = 4 << 20  # a caller's first message (a job request, or a run handed over with its environment)
# In a run process: (the run request, its fds, the job socket, the caller's socket, the hello) -> exit code.
RunHandler = Callable[[dict[str, Any], list[int], socket.socket, socket.socket, dict[str, Any]], int]


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a unix socket (SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def _refuse(conn: socket.socket, why: str) -> None:
    try:
        _send(conn, {"ready": False, "busy": why == "busy", "error": why})
    except OSError:
        pass
    conn.close()


def _knock(listener: socket.socket) -> None:
    """A second run while one is served: it gets a private warm parent instead (busy)."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    _refuse(conn, "busy")


def _still_ours(path: Path, inode: int) -> bool:
    try:
        return path.stat().st_ino == inode
    except OSError:
        return False


def serve(path: Path, mode: str, scratch: Path, digest: str, idle_s: float, on_run: RunHandler | None = None) -> None:
    # The host's view once, as a private warm parent learns it (runtime/warm/parent.py): every job leader
    # forked from here inherits it instead of walking the host's filesystems itself (docs/run-daemon.md).
    hold = hold_shared(scratch, lambda p: p.mkdir(mode=0o755, exist_ok=True))  # removed by the last holder
    HELD_FDS.add(hold)
    scan = hostview.start_scan()
    info = _preload(mode)
    hostview.learn(scan)
    cgroup.sweep()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path.with_suffix(".new")
    tmp.unlink(missing_ok=True)
    listener.bind(str(tmp))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)  # the socket appears only once the daemon can answer
    ours = path.stat().st_ino
    listener.listen(8)
    try:
        idle_since = time.monotonic()
        while True:
            listener.settimeout(min(idle_s, DOOR_CHECK_S))
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - idle_since >= idle_s or not _still_ours(path, ours):
                    return  # idle, or its socket was removed or taken over: gone until a run starts one
                continue
            listener.settimeout(None)
            conn.setblocking(True)
            if peer_uid(conn) != os.getuid():  # another user: never served, whatever the file modes say
                _refuse(conn, "the run daemon serves only its owner")
                continue
            hello = {"ready": True, "pid": os.getpid(), "digest": digest, "scratch": str(scratch), "mode": mode,
                     "socket": str(path), **info}
            _send(conn, hello)
            try:
                shutdown = _serve_caller(conn, listener, on_run, hello)
            except OSError:
                shutdown = False
            conn.close()
            if shutdown:
                return
            idle_since = time.monotonic()
    finally:
        try:
            if path.stat().st_ino == ours:  # not a newer daemon's socket
                path.unlink()
        except OSError:
            pass
        listener.close()
        release_shared(scratch, hold)  # removed unless a run still uses it (a busy run's private parent)


def _first_message(conn: socket.socket, listener: socket.socket) -> tuple[bytes, list[int]]:
    """The caller's first line (and whatever followed it), and the fds sent with it; knocks meanwhile are busy."""
    data, fds = b"", []
    while b"\n" not in data and len(data) < MAX_FIRST_LINE:
        ready, _, _ = select.select([conn, listener], [], [])
        if listener in ready:
            _knock(listener)
        if conn not in ready:
            continue
        chunk, got, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        fds.extend(got)
        if not chunk:
            break
        data += chunk
    return data, fds


def _serve_caller(conn: socket.socket, listener: socket.socket, on_run: RunHandler | None,
                  hello: dict[str, Any]) -> bool:
    data, fds = _first_message(conn, listener)
    try:
        request = json.loads(data.split(b"\n", 1)[0]) if b"\n" in data else {}
    except ValueError:
        request = {}
    if on_run is None or not isinstance(request, dict) or request.get("op") != "run" or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return session(conn, listener, _knock, data) if data else False
    return _run_handed(conn, listener, request, fds, on_run, hello)


def _run_handed(conn: socket.socket, listener: socket.socket, request: dict[str, Any], fds: list[int],
                on_run: RunHandler, hello: dict[str, Any]) -> bool:
    """A run handed over whole: a forked run process does it and sends its jobs back here, as a caller would."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the run process
        code = 70
        try:
            listener.close()
            ours.close()
            for fd in HELD_FDS:
                os.close(fd)
            code = on_run(request, fds, theirs, conn, hello)
        except BaseException:  # noqa: BLE001 - the daemon's log says why; the caller sees the session end
            traceback.print_exc()
        finally:
            os._exit(code)
    theirs.close()
    for fd in fds:
        os.close(fd)
    try:
        return session(ours, listener, _knock)
    finally:
        ours.close()
        os.waitpid(pid, 0)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
