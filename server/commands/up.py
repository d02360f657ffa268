"""`crosscheck up`: the whole service on one machine: migrate, tokens, the API and one SIM worker.

Without DATABASE_URL and BROKER_URL everything lives in --data-dir (SQLite and the embedded SQLite
broker); with DATABASE_URL=postgresql://... and BROKER_URL=redis://... it is the production setup.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2 as httpx

from server.commands import local

READY_TIMEOUT_S = 120.0
READY_PATH = "/readyz"
ADMIN_SCOPES = ["admin"]  # admin implies read, submit and worker (server.auth.IMPLIED)
WORKER_SCOPES = ["worker"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("up", help="run the API and a SIM worker on this machine")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1", help="address the API listens on")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="database, broker, blobs and tokens.json (default: $DATA_DIR or ./crosscheck-data)")
    p.add_argument("--concurrency", type=int, default=1, help="jobs the SIM worker runs at a time")
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

    stored = local.read_tokens(data_dir)
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
        local.write_tokens(data_dir, result)
    return result


def _describe(settings: Any) -> str:
    database = "SQLite" if settings.is_sqlite else settings.resolved_database_url.split(":", 1)[0]
    broker = settings.broker_url.split(":", 1)[0] if settings.broker_url else "the embedded SQLite broker"
    return f"database: {database}, broker: {broker}"


def _ready(url: str) -> bool:
    try:
        return httpx.get(url + READY_PATH, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _api_command(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", "server.main:app", "--host", host, "--port", str(port),
            "--log-level", "info"]


def run(args: argparse.Namespace) -> int:
    from server import migrate
    from server.commands.worker import celery_command

    data_dir = (args.data_dir or local.data_dir_from_env()).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = _configure(data_dir)
    print(f"crosscheck up: data in {data_dir}; {_describe(settings)}", flush=True)
    migrate.upgrade(settings.resolved_database_url)
    secrets = ensure_tokens(data_dir)
    url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}"
    env = {**os.environ, "DATA_DIR": str(data_dir), "API_URL": url, "WORKER_TOKEN": secrets["worker"]}
    # One SIM worker on this machine: let it run a job's cases side by side on the cores it has.
    env.setdefault("CASE_PARALLEL", str(min(os.cpu_count() or 1, 4) // max(1, args.concurrency) or 1))

    stopping = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    children: list[tuple[str, subprocess.Popen[bytes]]] = []
    code = 0
    try:
        children.append(("api", local.start(_api_command(args.host, args.port), env)))
        children.append(("worker", local.start(celery_command(["sim"], args.concurrency, "sim-local"), env)))
        if not _wait_ready(url, children, stopping):
            code = 1 if not stopping.is_set() else 0
        else:
            print(f"\nPTO Crosscheck is up at {url}/\n  admin token (dashboard login, crosscheck submit): "
                  f"{secrets['admin']}\n  tokens are kept in {data_dir / local.TOKENS_FILE}\n"
                  "Press Ctrl-C to stop.", flush=True)
            code = _supervise(children, stopping)
    finally:
        print("crosscheck up: stopping...", flush=True)
        for _name, proc in reversed(children):  # the worker first: it reports to the API
            local.stop(proc)
        for s, handler in previous.items():
            signal.signal(s, handler)
        print("crosscheck up: stopped", flush=True)
    return code


def _wait_ready(url: str, children: list[tuple[str, subprocess.Popen[bytes]]], stopping: threading.Event) -> bool:
    deadline_polls = int(READY_TIMEOUT_S / 0.25)
    for _ in range(deadline_polls):
        if stopping.is_set():
            return False
        dead = [(n, p.returncode) for n, p in children if p.poll() is not None]
        if dead:
            print(f"error: the {dead[0][0]} process exited (code {dead[0][1]}) during start-up", file=sys.stderr)
            return False
        if _ready(url):
            return True
        stopping.wait(0.25)
    print(f"error: the API did not answer {url}{READY_PATH} within {READY_TIMEOUT_S:.0f} s", file=sys.stderr)
    return False


def _supervise(children: list[tuple[str, subprocess.Popen[bytes]]], stopping: threading.Event) -> int:
    """Wait for Ctrl-C (0) or for a child to die (1)."""
    while not stopping.wait(0.5):
        for name, proc in children:
            if proc.poll() is not None:
                print(f"error: the {name} process exited unexpectedly (code {proc.returncode})", file=sys.stderr)
                return 1
    return 0
