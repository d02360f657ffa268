"""End-to-end fixtures: the real API (uvicorn) and real Celery workers as subprocesses.

Two backends: the embedded one (SQLite database + SQLite broker in a temp dir) and the
production one (a PostgreSQL database created and dropped here, a Redis db flushed here).
Waiting is polling with generous deadlines; a deadline that passes fails with what was seen.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from sqlalchemy import create_engine, text

from server import migrate
from server.config import Settings
from server.db import make_engine
from server.services import tokens
from tests.conftest import EXAMPLES, REPO
from tests.leftovers import remove_dirs_of
from tests.parallel import redis_db, worker_tag

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
REDIS_URL = f"redis://127.0.0.1:6379/{redis_db()}"  # a db number of this worker's own, flushed before and after
FINISHED = ("succeeded", "failed", "error", "cancelled", "timeout")
START_DEADLINE_S = 120.0
JOB_DEADLINE_S = 300.0
# Small liveness settings, so a killed worker's job is re-queued within seconds.
FAST_ENV = {"JOB_HEARTBEAT_S": "1", "STALE_JOB_S": "5", "CASE_TIMEOUT_S": "60", "CASE_MEMORY_GIB": "8"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """Every live process below pid (from /proc)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    todo.append(child)
    return found


def alive(pid: int) -> bool:
    """True for a live process (a zombie awaiting its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill_all(pids: list[int]) -> None:
    """SIGKILL these processes of ours that are still alive (checked by command line, against pid reuse)."""
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if alive(pid) and any(m in cmd for m in (b"server.cli", b"celery", b"uvicorn", b"runtime")):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any service settings of the developer's, plus `extra`."""
    keys = ("DATABASE_URL", "BROKER_URL", "DATA_DIR", "BLOB_DIR", "API_URL", "WORKER_TOKEN", "CACHE_DIR",
            "CROSSCHECK_TOKEN", "CROSSCHECK_SERVER", "ASCEND_HOME_PATH")
    env = {k: v for k, v in os.environ.items() if k.upper() not in keys}
    env.update(extra)
    return env


class Stack:
    """One API and its workers on one backend; the admin's HTTP client in `http`."""

    def __init__(self, name: str, env: dict[str, str], logs: Path):
        self.name = name
        self.env = env
        self.logs = logs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env["API_URL"] = self.url
        self.api: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.killed: set[int] = set()  # pids this stack SIGKILLed: their dirs are swept at stop()
        self.http = httpx.Client(base_url=self.url + "/api/v1",
                                 headers={"Authorization": f"Bearer {env['CROSSCHECK_TOKEN']}"}, timeout=30)

    def _spawn(self, cmd: list[str], log_name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        out = open(self.logs / log_name, "ab")
        try:
            return subprocess.Popen(cmd, env=env or self.env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
        finally:
            out.close()

    def start_api(self) -> None:
        self.api = self._spawn([sys.executable, "-m", "uvicorn", "--factory", "server.main:create_app", "--host", "127.0.0.1",
                                "--port", str(self.port)], "api.log")
        self.wait(lambda: self._ready(), START_DEADLINE_S, "the API to answer /readyz", self.logs / "api.log")

    def _ready(self) -> bool:
        assert self.api is not None
        if self.api.poll() is not None:
            raise AssertionError(f"the API exited: {(self.logs / 'api.log').read_text()[-3000:]}")
        try:
            return httpx.get(self.url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start_worker(self, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """`crosscheck worker` (which starts Celery), waiting until it has posted its heartbeat."""
        cmd = [sys.executable, "-m", "server.cli", "worker", "--queue", "sim", "--name", name]
        proc = self._spawn(cmd, f"worker-{name}.log", env)
        self.workers.append(proc)
        full = f"{name}@{socket.gethostname()}"

        def posted() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"worker {name} exited: {(self.logs / f'worker-{name}.log').read_text()[-3000:]}")
            return any(w["name"] == full and w["online"] for w in self.get("/workers")["items"])

        self.wait(posted, START_DEADLINE_S, f"worker {name} to post its heartbeat", self.logs / f"worker-{name}.log")
        return proc

    def kill_worker(self, proc: subprocess.Popen[bytes]) -> list[int]:
        """SIGKILL the worker's whole process tree (Celery, pool processes, warm parents); the pids."""
        tree = [proc.pid, *descendants(proc.pid)]
        kill_all(tree)
        proc.wait()
        self.killed.update(tree)
        return tree

    def stop(self) -> None:
        """SIGTERM each process (a worker finishes its job), then SIGKILL whatever is left of its tree."""
        for proc in [*self.workers, *([self.api] if self.api else [])]:
            tree = [proc.pid, *descendants(proc.pid)]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    pass
            forced = [pid for pid in tree if alive(pid)]
            kill_all(tree)
            proc.wait()
            self.killed.update(forced)
        self.http.close()
        remove_dirs_of(self.killed, Path(self.env["TMPDIR"]) if "TMPDIR" in self.env else None)


    # ---------------------------------------------------------------- API helpers

    def get(self, path: str, **params: Any) -> Any:
        r = self.http.get(path, params=params)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
        return r.json()

    def post(self, path: str, **kwargs: Any) -> Any:
        r = self.http.post(path, **kwargs)
        assert r.status_code in (200, 202), f"POST {path}: {r.status_code} {r.text}"
        return r.json()

    def submit(self, example: str, modes: tuple[str, ...] = ("sim",)) -> list[dict[str, Any]]:
        from client.submit import bundle

        filename, data = bundle(EXAMPLES / example)
        # fresh: each submission here is a run to watch; an identical one would link the earlier job (docs/service.md §6)
        accepted = self.post("/submissions", data={"modes": list(modes), "fresh": "true"}, files={"file": (filename, data)},
                             headers={"Idempotency-Key": uuid.uuid4().hex})
        return list(accepted["jobs"])

    def wait_job(self, job_id: int, statuses: tuple[str, ...] = FINISHED,
                 deadline_s: float = JOB_DEADLINE_S) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def reached() -> bool:
            seen.update(self.get(f"/jobs/{job_id}"))
            return seen["status"] in statuses

        self.wait(reached, deadline_s, f"job {job_id} to reach {statuses}", None, seen)
        return seen

    @staticmethod
    def wait(predicate: Any, deadline_s: float, what: str, log: Path | None = None, seen: Any = None) -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.25)
        tail = log.read_text()[-3000:] if log and log.exists() else ""
        raise AssertionError(f"gave up after {deadline_s:.0f} s waiting for {what}; last seen {seen}\n{tail}")


@contextmanager
def running(name: str, env: dict[str, str], logs: Path, worker: str | None = None) -> Iterator[Stack]:
    """A Stack with its API up (and one SIM worker, when named), stopped afterwards whatever happened."""
    s = Stack(name, env, logs)
    try:
        s.start_api()
        if worker:
            s.start_worker(worker)
        yield s
    finally:
        s.stop()


def _tokens(url: str) -> tuple[str, str]:
    engine = make_engine(url)
    try:
        from sqlalchemy.orm import Session

        with Session(engine) as session, session.begin():
            _, admin = tokens.create(session, "e2e admin", ["admin"])
            _, worker = tokens.create(session, "e2e worker", ["worker"])
        return admin, worker
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def sqlite_env(tmp_path_factory: pytest.TempPathFactory, calculator_cache: Path) -> Iterator[dict[str, str]]:
    data = tmp_path_factory.mktemp("e2e-sqlite")
    settings = Settings(data_dir=data)
    migrate.upgrade(settings.resolved_database_url)
    admin, worker = _tokens(settings.resolved_database_url)
    yield clean_env(DATA_DIR=str(data), CACHE_DIR=str(calculator_cache), WORKER_TOKEN=worker,
                    CROSSCHECK_TOKEN=admin, **FAST_ENV)


@pytest.fixture(scope="module")
def pg_redis_env(tmp_path_factory: pytest.TempPathFactory, calculator_cache: Path) -> Iterator[dict[str, str]]:
    import redis

    name = f"crosscheck_e2e_{worker_tag()}_{uuid.uuid4().hex[:8]}"
    admin_engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin_engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001
        admin_engine.dispose()
        pytest.fail(f"cannot create a PostgreSQL database at {PG_ADMIN_URL}: {exc}")
    broker = redis.Redis.from_url(REDIS_URL)
    broker.flushdb()
    database_url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    try:
        settings = Settings(database_url=database_url)
        migrate.upgrade(settings.resolved_database_url)
        admin, worker = _tokens(settings.resolved_database_url)
        data = tmp_path_factory.mktemp("e2e-pg")
        yield clean_env(DATA_DIR=str(data), DATABASE_URL=database_url, BROKER_URL=REDIS_URL,
                        CACHE_DIR=str(calculator_cache), WORKER_TOKEN=worker, CROSSCHECK_TOKEN=admin, **FAST_ENV)
    finally:
        broker.flushdb()
        broker.close()
        with admin_engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("pg_redis", id="postgres-redis", marks=[pytest.mark.postgres, pytest.mark.redis]),
]


@pytest.fixture(scope="module", params=BACKENDS)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The API and one SIM worker on the backend, for the module's tests."""
    env = request.getfixturevalue(f"{request.param}_env")
    with running(request.param, dict(env), tmp_path_factory.mktemp(f"logs-{request.param}"),
                 worker=f"e2e-{request.param}") as s:
        yield s
