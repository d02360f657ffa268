"""`crosscheck run`'s thin start: hand the whole run to the run daemon when one is up and right for it
(docs/run-daemon.md, "Handing a run over").

It imports no torch, pypto, pydantic or rich: the daemon's run process, a fork of the warm parent that
has them, parses the arguments, runs and prints as `crosscheck run` would, on this process's stdin, stdout
and stderr. Anything it cannot vouch for (no daemon, another digest, busy, options it cannot serve) is
left to the ordinary start: `hand_off` returns None and nothing was printed.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from runtime.evidence.calculator import default_cache_dir
from runtime.warm import daemon_address

HELLO_TIMEOUT_S = 10.0
INFRA = 3  # runtime/exit_codes.py: the daemon went away mid-run
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _option(argv: list[str], name: str) -> str | None:
    """The last value of `name` (`--name V` or `--name=V`), as argparse would take it; the run process checks."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def _connect(path: Path) -> tuple[socket.socket, Any, dict[str, Any]] | None:
    """A session with the daemon and its hello, or None (none listening, or no answer)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        sock.settimeout(HELLO_TIMEOUT_S)
        reader = sock.makefile("rb")
        hello = json.loads(reader.readline() or b"{}")
        sock.settimeout(None)
    except (OSError, ValueError):
        sock.close()
        return None
    return sock, reader, hello


def hand_off(argv: list[str]) -> int | None:
    """Run `crosscheck run ARGV` in the run daemon; its exit code, or None to start the ordinary way."""
    if os.environ.get(daemon_address.NO_DAEMON_ENV) or "--no-daemon" in argv:
        return None
    mode = _option(argv, "--mode") or "sim"
    cache = _option(argv, "--cache-dir")
    try:
        path = daemon_address.socket_path(Path(cache) if cache else default_cache_dir(), mode, create=False)
    except (OSError, daemon_address.DaemonPlaceError):
        return None
    connected = _connect(path)
    if connected is None:
        return None
    sock, reader, hello = connected
    # Busy, or built from other code, another pypto, environment or starting dir: the ordinary start
    # decides (it replaces a daemon of another digest, or runs with a private warm parent).
    if not hello.get("ready") or hello.get("digest") != daemon_address.source_digest(mode):
        sock.close()
        return None
    with sock:
        return _handed(sock, reader, argv)


def _handed(sock: socket.socket, reader: Any, argv: list[str]) -> int | None:
    umask = os.umask(0)
    os.umask(umask)
    request = {"op": "run", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask}
    socket.send_fds(sock, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    answer = _line(reader)
    if answer is None or "fallback" in answer:  # it printed nothing: start the ordinary way
        return None
    # From here the run is the daemon's: our signals go to its run process (Ctrl-C cancels the jobs there).
    def forward(signum: int, _frame: object) -> None:
        try:
            sock.sendall(json.dumps({"op": "signal", "signal": signum}).encode() + b"\n")
        except OSError:
            pass
    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        while True:
            answer = _line(reader)
            if answer is None:
                print("error: infrastructure: the run daemon stopped during the run", file=sys.stderr)
                return INFRA
            if "exit" in answer:
                return int(answer["exit"])
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _line(reader: Any) -> dict[str, Any] | None:
    while True:
        try:
            line = reader.readline()
        except InterruptedError:
            continue
        except OSError:
            return None
        if not line:
            return None
        try:
            return json.loads(line)
        except ValueError:
            return None
