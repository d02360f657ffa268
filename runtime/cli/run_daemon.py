"""The run daemon's entry (docs/run-daemon.md): runtime.warm.daemon's loop, plus the run process that
does a whole `crosscheck run` handed over by its thin start (runtime/cli/handoff.py).

The run process is a fork of the daemon, so torch, pypto and our runtime are already imported. It takes
the caller's stdin, stdout, stderr, environment, working dir and umask, parses the arguments and runs as
`crosscheck run` would, with the daemon's warm parent for its jobs: the same requests to the same job
leaders (forks of the daemon, never of this process), so the same sandbox and verdicts.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from runtime.cli import cli, cli_help
from runtime.evidence.calculator import default_cache_dir
from runtime.warm import daemon_address
from runtime.warm.daemon import serve
from runtime.warm.daemon_client import HandedParent


def run_parser() -> argparse.ArgumentParser:
    """`crosscheck run`'s own parser (server/cli.py registers the same arguments)."""
    parser = argparse.ArgumentParser(prog="crosscheck run", description="verify one submission on this host")
    cli.add_run_arguments(parser)
    cli_help.apply(parser)
    return parser


def not_served(args: argparse.Namespace, hello: dict[str, Any]) -> str | None:
    """Why this daemon should not do the run (the caller then starts the ordinary way), or None."""
    if args.no_daemon or os.environ.get(daemon_address.NO_DAEMON_ENV):
        return "--no-daemon"
    if args.list or args.op:
        return "a checkout: each operator is a run of its own"
    if args.mode != hello.get("mode"):
        return f"a {args.mode} run at the {hello.get('mode')} daemon"
    try:
        path = daemon_address.socket_path(args.cache_dir or default_cache_dir(), args.mode, create=False)
    except (OSError, daemon_address.DaemonPlaceError) as exc:
        return str(exc)
    return None if str(path) == hello.get("socket") else "another cache dir's daemon"


def run_handed(request: dict[str, Any], fds: list[int], jobs: socket.socket, caller: socket.socket,
               hello: dict[str, Any]) -> int:
    """In the run process: become the caller's `crosscheck run` and do it; the exit code is sent back."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def answer(obj: dict[str, Any]) -> None:
        caller.sendall(json.dumps(obj).encode() + b"\n")

    try:
        args = run_parser().parse_args(request["argv"])
    except SystemExit as exc:  # a usage error, printed on the caller's stderr as the ordinary start would
        answer({"accepted": True})
        return _finish(answer, exc.code if isinstance(exc.code, int) else 2)
    why = not_served(args, hello)
    if why:
        answer({"fallback": why})
        return 0
    answer({"accepted": True})
    _forward_signals(caller)
    try:
        code = cli.run_command(args, warm=HandedParent(args.mode, Path(hello["scratch"]), jobs, hello))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 128 + signal.SIGINT
    except Exception:  # noqa: BLE001 - printed as an uncaught error of `crosscheck run` would be
        traceback.print_exc()
        code = 1
    return _finish(answer, code)


def _finish(answer: Any, code: int) -> int:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    try:
        answer({"exit": code})
    except OSError:
        pass
    return code


def _forward_signals(caller: socket.socket) -> None:
    """The caller's Ctrl-C and SIGTERM reach this run's main thread; a caller gone is a SIGTERM (cancel, clean up)."""
    main = threading.main_thread().ident
    assert main is not None

    def watch() -> None:
        reader = caller.makefile("rb")
        while True:
            try:
                line = reader.readline()
            except OSError:
                line = b""
            if not line:
                signal.pthread_kill(main, signal.SIGTERM)
                return
            try:
                signum = int(json.loads(line).get("signal", 0))
            except (ValueError, AttributeError, TypeError):
                continue
            if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.pthread_kill(main, signal.SIGTERM if signum == signal.SIGHUP else signum)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4], float(sys.argv[5]), on_run=run_handed)
