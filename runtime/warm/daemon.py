"""The run daemon: a warm parent kept alive between `crosscheck run` invocations (docs/run-daemon.md).

Started by the first run (runtime/warm/daemon_client.py) as
`python -m runtime.warm.daemon SOCKET MODE SCRATCH DIGEST IDLE_S`; it imports torch and pypto once,
listens on SOCKET (in a 0700 directory of the user's cache dir), serves one run at a time with the
warm parent's own loop (runtime/warm/parent.py `session`), and exits after IDLE_S seconds without a
run, or when a run asks it to (its DIGEST no longer matches our code, pypto or torch).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from runtime.fence import cgroup, hostview
from runtime.warm.parent import _preload, _send, session

DOOR_CHECK_S = 30.0  # while idle, this often it checks that its socket is still there and still its own


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


def serve(path: Path, mode: str, scratch: Path, digest: str, idle_s: float) -> None:
    # The host's view once, as a private warm parent learns it (runtime/warm/parent.py): every job leader
    # forked from here inherits it instead of walking the host's filesystems itself (docs/run-daemon.md).
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
            _send(conn, {"ready": True, "pid": os.getpid(), "digest": digest, "scratch": str(scratch), **info})
            try:
                shutdown = session(conn, listener, _knock)
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
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
