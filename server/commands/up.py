"""`crosscheck up`: the whole service on one machine: migrate, tokens, the API and one SIM worker.

Without DATABASE_URL and BROKER_URL everything lives in --data-dir (SQLite and the embedded SQLite
broker); with DATABASE_URL=postgresql://... and BROKER_URL=redis://... it is the production setup.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx

from server.commands import child_processes, datadir
from server.commands.job_feed import JobFeed

READY_TIMEOUT_S = 120.0
READY_PATH = "/readyz"
ADMIN_SCOPES = ["admin"]  # admin implies read, submit and worker (server.auth.IMPLIED)
WORKER_SCOPES = ["worker"]
POLL_S = 0.5
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)  # between worker restarts; the last one repeats
STABLE_S = 120.0  # a worker that ran this long before dying starts the backoff over
FEED_S = 2.0  # how often the console looks for finished jobs


@dataclass
class Child:
    """One supervised child process of `crosscheck up`."""
    name: str
    command: list[str]
    env: dict[str, str]
    umask: int = -1
    mute_stdout: bool = False  # Celery says "worker: Warm shutdown (MainProcess)" on stdout, its logs go to stderr
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0
    failures: int = field(default=0)  # deaths in a row without a stable run

    def start(self) -> None:
        self.proc = child_processes.start(self.command, self.env, umask=self.umask,
                                          stdout=subprocess.DEVNULL if self.mute_stdout else None)
        self.started_at = time.monotonic()

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def code(self) -> int | None:
        return self.proc.returncode if self.proc else None

    def next_backoff_s(self) -> float:
        self.failures = 1 if time.monotonic() - self.started_at >= STABLE_S else self.failures + 1
        return BACKOFF_S[min(self.failures, len(BACKOFF_S)) - 1]

    def reap(self) -> None:
        """Kill what is left of a dead child's process group (Celery's pool, its warm parents)."""
        if self.proc is not None:
            child_processes.stop(self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            child_processes.stop(self.proc)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("up", help="run the API and a SIM worker on this machine")
    p.add_argument("--port", type=int, default=8000, help="port the API listens on")
    p.add_argument("--host", default="127.0.0.1", help="address the API listens on")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="database, broker, blobs and tokens.json (default: $DATA_DIR or ./crosscheck-data)")
    p.add_argument("--concurrency", type=int, default=1, help="jobs the SIM worker runs at a time")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also show the API's and the worker's own logs (requests, Celery, job events)")
    p.set_defaults(func=run)


def _configure(data_dir: Path) -> Any:
    """Point this process's settings at data_dir and return them."""
    from server import db
    from server.config import get_settings

    os.environ["DATA_DIR"] = str(data_dir)
    get_settings.cache_clear()
    db.reset_caches()
    return get_settings()


def ensure_tokens(data_dir: Path) -> dict[str, str]:
    """An admin and a worker token that are valid in the database, reusing tokens.json's when they are."""
    from server.db import session_scope
    from server.services import tokens

    stored = datadir.read_tokens(data_dir)
    wanted = {"admin": ADMIN_SCOPES, "worker": WORKER_SCOPES}
    result: dict[str, str] = {}
    with session_scope() as session:
        for role, scopes in wanted.items():
            secret = stored.get(role, "")
            token = tokens.verify(session, secret) if secret else None
            if token is None or not set(scopes) <= token.scope_set:
                _, secret = tokens.create(session, f"{role} (crosscheck up)", scopes)
            result[role] = secret
    if result != stored:
        datadir.write_tokens(data_dir, result)
    return result


def _describe(settings: Any) -> str:
    database = "SQLite" if settings.is_sqlite else settings.resolved_database_url.split(":", 1)[0]
    broker = settings.broker_url.split(":", 1)[0] if settings.broker_url else "the embedded SQLite"
    return f"{database} database, {broker} broker"


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + READY_PATH, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _api_command(host: str, port: int, verbose: bool = False) -> list[str]:
    """uvicorn; without --verbose only its warnings and errors, and no line per request."""
    return [sys.executable, "-m", "uvicorn", "--factory", "server.main:create_app", "--host", host, "--port", str(port),
            "--log-level", "info" if verbose else "warning", *([] if verbose else ["--no-access-log"])]


def _admin_token_lines(secret: str, tokens_file: Path) -> str:
    """The admin token goes to a terminal only: a redirected stdout is a log file others may read."""
    if sys.stdout.isatty():
        return f"  admin token (to sign in): {secret}\n  tokens are kept in {tokens_file}"
    return (f"  admin token (to sign in): in {tokens_file}\n  (readable by this user only; not printed: stdout is "
            "not a terminal)")


def port_in_use(host: str, port: int) -> bool:
    """Something already listens there: the readiness check would then find another server, and this
    worker would report to it with a token it does not know."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def run(args: argparse.Namespace) -> int:
    from server import migrate
    from server.commands.worker import celery_command

    if port_in_use(args.host, args.port):
        free = next((p for p in range(args.port + 1, min(args.port + 50, 65536)) if not port_in_use(args.host, p)),
                    None)
        print(f"error: port {args.port} on {args.host} is in use (another `crosscheck up` or server?); start on "
              f"a free one with --port N" + (f" (--port {free} is free)" if free else ""), file=sys.stderr)
        return 2
    data_dir = datadir.make_private((args.data_dir or datadir.data_dir_from_env()).resolve())
    settings = _configure(data_dir)
    print(f"crosscheck up: data in {data_dir}\n  {_describe(settings)}", flush=True)
    migrate.upgrade(settings.resolved_database_url)
    secrets = ensure_tokens(data_dir)
    datadir.make_private(data_dir)  # anything migrate or the tokens created
    url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}"
    env = {**os.environ, "DATA_DIR": str(data_dir), "API_URL": url, "WORKER_TOKEN": secrets["worker"]}
    # One SIM worker on this machine: let it run a job's cases side by side on the cores it has.
    env.setdefault("CASE_PARALLEL", str(min(os.cpu_count() or 1, 4) // max(1, args.concurrency) or 1))

    stopping = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    api = Child("api", _api_command(args.host, args.port, args.verbose), env, umask=datadir.PRIVATE_UMASK)
    worker = Child("worker", celery_command(["sim"], args.concurrency, "sim-local",
                                            "INFO" if args.verbose else "WARNING", quiet=not args.verbose), env,
                   mute_stdout=not args.verbose)
    children = [api, worker]
    code = 0
    try:
        for child in children:
            child.start()
        if not _wait_ready(url, children, stopping):
            code = 1 if not stopping.is_set() else 0
        else:
            print(f"\nPTO Crosscheck is up at {url}/\n{_admin_token_lines(secrets['admin'], data_dir / datadir.TOKENS_FILE)}"
                  "\nFinished jobs are listed below" + ("" if args.verbose else " (--verbose: the service's logs too)")
                  + ".\nPress Ctrl-C to stop.\n", flush=True)
            code = _supervise(api, worker, stopping, JobFeed(url))
    finally:
        _say("crosscheck up: stopping...")
        for child in reversed(children):  # the worker first: it reports to the API
            child.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
        _say("crosscheck up: stopped")
    return code


def _say(line: str) -> None:
    """A line on stdout that cannot stop the shutdown: behind `| tee` a Ctrl-C closes the pipe first, and a
    BrokenPipeError here once left the API and the worker running without their supervisor."""
    try:
        print(line, flush=True)
    except OSError:
        pass


def _wait_ready(url: str, children: list[Child], stopping: threading.Event) -> bool:
    deadline_polls = int(READY_TIMEOUT_S / 0.25)
    for _ in range(deadline_polls):
        if stopping.is_set():
            return False
        dead = [c for c in children if c.exited()]
        if dead:
            print(f"error: the {dead[0].name} process exited (code {dead[0].code()}) during start-up", file=sys.stderr)
            return False
        if _ready(url):
            return True
        stopping.wait(0.25)
    print(f"error: the API did not answer {url}{READY_PATH} within {READY_TIMEOUT_S:.0f} s", file=sys.stderr)
    return False


def _supervise(api: Child, worker: Child, stopping: threading.Event, feed: JobFeed | None = None) -> int:
    """Wait for Ctrl-C (0) or the API's death (1); restart a dead worker with backoff meanwhile.

    The API is what users and remote workers talk to, so a worker that dies (a SIGKILL of Celery's
    main process, an out-of-memory kill) must not take it down: its job is re-queued by the API's
    stale sweep once its heartbeats stop, and a new worker picks it up.
    """
    restart_at: float | None = None
    next_feed = 0.0
    while not stopping.wait(POLL_S):
        if feed is not None and time.monotonic() >= next_feed:
            for line in feed.poll():
                print(line, flush=True)
            next_feed = time.monotonic() + FEED_S
        if api.exited():
            print(f"error: the api process exited unexpectedly (code {api.code()})", file=sys.stderr)
            return 1
        if restart_at is None and worker.exited():
            delay = worker.next_backoff_s()
            print(f"crosscheck up: the worker exited (code {worker.code()}); restarting it in {delay:.0f} s "
                  f"(restart {worker.restarts + 1})", file=sys.stderr, flush=True)
            worker.reap()
            restart_at = time.monotonic() + delay
        if restart_at is not None and time.monotonic() >= restart_at:
            worker.start()
            worker.restarts += 1
            restart_at = None
    return 0
