"""The service under load and faults (issue 36), on PostgreSQL and a Redis of its own.

    python bench/load.py [--clients 40] [--submissions 200] [--readers 10] [--api-workers 2] [--workers 2]

Starts `crosscheck api --workers N` and `crosscheck worker --concurrency 1` × W on a fresh PostgreSQL
database and a private `redis-server` (never the shared one: the bench restarts it). Then:
1. idle reads: `readers` clients read a job, the operators and the jobs list; their p99 is the baseline;
2. an upload burst: `clients` clients submit `submissions` small real kernels for tenant A (Idempotency-Key,
   retried), with the readers reading all along; `read_p99_ratio` = read p99 during the burst / idle p99, and
   `jobs_p99_ms` = the jobs list's p99 over the burst;
3. a second tenant: B submits one job while A's backlog waits; `fair_wait_jobs` = A's jobs that started
   between B's submission and the start of B's job (fair: at most the jobs running when it came);
4. a worker SIGKILLed mid-job: `worker_recovery_s` = from its job's last heartbeat to that job's next start;
5. Redis killed and started again empty, with submissions made while it is down (each must be a 202):
   `broker_recovery_s` = from Redis being back to every waiting job that had been sent being sent again and
   the next job starting;
6. the API SIGTERMed and started again while clients submit (their retries carry the same key);
then it waits for everything to finish and counts: `lost` = accepted submissions without a finished job,
`duplicated` = case results stored twice for one job attempt, or submissions made twice for one key.
The last line is `load lost=.. duplicated=.. read_p99_ratio=.. jobs_p99_ms=.. fair_wait_jobs=..
broker_recovery_s=.. worker_recovery_s=..`.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from client.submit import bundle  # noqa: E402
from server import migrate  # noqa: E402
from server.config import Settings  # noqa: E402
from server.services import tokens  # noqa: E402

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
FINISHED = ("succeeded", "failed", "error", "cancelled", "timeout", "expired")
EXAMPLE = REPO / "examples" / "scale_add"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants(pid: int) -> list[int]:
    """Every live process below pid (from /proc)."""
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0


def wait(predicate: Callable[[], bool], deadline_s: float, what: str, step_s: float = 0.2) -> float:
    """Seconds until predicate() held; raises after deadline_s."""
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        if predicate():
            return time.monotonic() - start
        time.sleep(step_s)
    raise SystemExit(f"gave up after {deadline_s:.0f} s waiting for {what}")


class Stack:
    """The database, the private Redis, the API and the workers, with the tokens of two tenants."""

    def __init__(self, args: argparse.Namespace, tmp: Path):
        self.args, self.tmp = args, tmp
        self.db = f"crosscheck_bench_load_{os.getpid()}"
        admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{self.db}"'))
        admin.dispose()
        self.database_url = f"postgresql://postgres@127.0.0.1:5432/{self.db}"
        settings = Settings(database_url=self.database_url)
        migrate.upgrade(settings.resolved_database_url)
        self.engine = sa.create_engine(settings.resolved_database_url)
        from sqlalchemy.orm import Session

        with Session(self.engine) as session, session.begin():
            self.secrets = {name: tokens.create(session, name, [scope])[1] for name, scope in
                            (("admin", "admin"), ("workers", "worker"), ("team-a", "submit"), ("team-b", "submit"))}
        self.redis_port, self.api_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.api_port}"
        self.env = {**os.environ, "DATABASE_URL": self.database_url, "DATA_DIR": str(tmp / "data"),
                    "BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0", "API_URL": self.url,
                    "WORKER_TOKEN": self.secrets["workers"], "PYTHONPATH": str(REPO), "CASE_MEMORY_GIB": "4"}
        (tmp / "data").mkdir()
        self.redis: subprocess.Popen[bytes] | None = None
        self.api: subprocess.Popen[bytes] | None = None
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def _spawn(self, cmd: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(self.tmp / log, "ab") as out:
            return subprocess.Popen(cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=self.tmp)

    def start_redis(self) -> None:
        self.redis = self._spawn(["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", str(self.tmp)], "redis.log")
        wait(lambda: self._redis_up(), 30, "redis-server")

    def _redis_up(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.redis_port)) == 0

    def kill_redis(self) -> None:
        assert self.redis is not None
        self.redis.kill()
        self.redis.wait()

    def start_api(self) -> None:
        self.api = self._spawn([sys.executable, "-m", "server.cli", "api", "--port", str(self.api_port),
                                "--workers", str(self.args.api_workers), "--log-level", "warning"], "api.log")
        wait(lambda: self._ready(), 120, "the API")

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop_api(self) -> None:
        assert self.api is not None
        self.api.send_signal(signal.SIGTERM)
        self.api.wait(timeout=60)

    def start_worker(self, name: str) -> None:
        self.workers[name] = self._spawn([sys.executable, "-m", "server.cli", "worker", "--queue", "sim",
                                          "--concurrency", "1", "--name", name], f"worker-{name}.log")

    def online(self) -> set[str]:
        r = httpx.get(self.url + "/api/v1/workers", headers=self.auth("admin"), timeout=10)
        return {w["name"].split("@")[0] for w in r.json()["items"] if w["online"]}

    def kill_worker(self, name: str) -> None:
        """SIGKILL the worker's whole tree: `crosscheck worker` starts Celery in a session of its own."""
        proc = self.workers.pop(name)
        for pid in [proc.pid, *descendants(proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets[who]}"}

    def sql(self, query: str, **params: Any) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(sa.text(query), params))

    def close(self) -> None:
        for name in list(self.workers):
            self.kill_worker(name)
        for proc in (self.api, self.redis):
            if proc is not None and proc.poll() is None:
                tree = [proc.pid, *descendants(proc.pid)]
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    pass
                for pid in tree:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        self.engine.dispose()
        admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)'))
        admin.dispose()


class Submitter:
    """Submissions of one tenant, each retried with its Idempotency-Key until it gets an answer."""

    def __init__(self, stack: Stack, who: str):
        self.stack, self.who = stack, who
        self.filename, self.data = bundle(EXAMPLE)
        self.accepted: dict[str, int] = {}  # key -> submission id
        self.statuses: list[int] = []
        self.lock = threading.Lock()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.stack.url + "/api/v1", headers=self.stack.auth(self.who), timeout=60)

    def submit(self, interactive: bool = False, client: httpx.Client | None = None) -> int:
        """One submission, on `client` (kept by a client thread: a new httpx client builds its TLS context, ~10 ms
        of this host's CPU, which on one host is taken from the server under test) or a client of its own."""
        if client is None:
            with self.client() as c:
                return self.submit(interactive, c)
        key = uuid.uuid4().hex
        # fresh: every submission runs (an identical one would otherwise link the warm-up job's results).
        form = {"modes": ["sim"], "interactive": "true" if interactive else "false", "fresh": "true"}
        for _ in range(120):
            try:
                r = client.post("/submissions", data=form, files={"file": (self.filename, self.data)},
                                headers={"Idempotency-Key": key})
            except httpx.HTTPError:
                time.sleep(0.5)  # the API is restarting: the same key again
                continue
            if r.status_code in (200, 202):
                with self.lock:
                    self.statuses.append(r.status_code)
                    self.accepted[key] = int(r.json()["submission_id"])
                return int(r.json()["jobs"][0]["id"])
            if r.status_code < 500 and r.status_code != 429:
                raise SystemExit(f"submission refused: {r.status_code} {r.text}")
            time.sleep(0.5)
        raise SystemExit("a submission got no answer in a minute")

    def many(self, n: int, clients: int) -> None:
        todo = list(range(n))
        lock = threading.Lock()

        def client() -> None:
            with self.client() as c:
                while True:
                    with lock:
                        if not todo:
                            return
                        todo.pop()
                    self.submit(client=c)

        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


class Readers:
    """Clients reading one job, the operators and the jobs list in a loop; latencies per kind.

    They run in a process of their own: in the bench's process they shared one interpreter with the 40
    submitting clients, whose own work was then counted as the server's read latency."""

    def __init__(self, stack: Stack, n: int, job_id: int):
        self.args = (stack.url + "/api/v1", stack.auth("admin"), n, job_id)
        self.samples: dict[str, list[float]] = {"read": [], "jobs": []}
        self._proc: Any = None

    def start(self) -> Readers:
        ctx = multiprocessing.get_context("spawn")
        self._ready, self._stop, self._out = ctx.Event(), ctx.Event(), ctx.Queue()
        self._proc = ctx.Process(target=read_loop, args=(*self.args, self._ready, self._stop, self._out))
        self._proc.start()
        if not self._ready.wait(120):
            raise SystemExit("the readers' process did not start")
        return self

    def stop(self) -> dict[str, list[float]]:
        self._stop.set()
        self.samples = self._out.get(timeout=300)  # before join: a child with queued data does not exit
        self._proc.join()
        return self.samples


def read_loop(base_url: str, headers: dict[str, str], n: int, job_id: int, ready: Any, stop: Any, out: Any) -> None:
    """The readers' process: n threads read until `stop`, then their latencies go to `out`.

    It leads a session of its own: Linux groups a session's processes for the CPU scheduler (autogroup), and
    in the bench's session the readers shared one group's share with the 40 submitting threads; a
    server-side timer showed no read arriving for 2 s at a burst's start while uploads did."""
    os.setsid()
    samples: dict[str, list[float]] = {"read": [], "jobs": [], "failed": []}
    paths = [("read", f"/jobs/{job_id}"), ("read", "/operators"), ("jobs", "/jobs?limit=50")]

    def loop() -> None:
        with httpx.Client(base_url=base_url, headers=headers, timeout=60) as c:
            i = 0
            while not stop.is_set():
                kind, path = paths[i % len(paths)]
                i += 1
                start = time.perf_counter()
                try:
                    ok = c.get(path).status_code == 200
                except httpx.HTTPError:
                    ok = False
                samples[kind if ok else "failed"].append(time.perf_counter() - start)
                time.sleep(0.05)

    threads = [threading.Thread(target=loop) for _ in range(n)]
    for t in threads:
        t.start()
    ready.set()
    for t in threads:
        t.join()
    out.put(samples)


def job_started(stack: Stack, job_id: int, attempt: int = 1) -> bool:
    rows = stack.sql("SELECT status, attempts FROM jobs WHERE id = :id", id=job_id)
    return bool(rows) and rows[0][1] >= attempt and rows[0][0] in ("running", *FINISHED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--readers", type=int, default=10)
    parser.add_argument("--api-workers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--idle-s", type=float, default=10.0, help="how long the idle reads run")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop what it started (finally below) on a SIGTERM
    tmp = Path(tempfile.mkdtemp(prefix="bench-load-"))
    stack = Stack(args, tmp)
    try:
        return run(stack, args)
    finally:
        stack.close()
        print(f"logs: {tmp}", file=sys.stderr)


def run(stack: Stack, args: argparse.Namespace) -> int:
    stack.start_redis()
    stack.start_api()
    names = [f"load{i}" for i in range(args.workers)]
    for name in names:
        stack.start_worker(name)
    wait(lambda: stack.online() >= set(names), 300, "the workers' heartbeats")
    a, b = Submitter(stack, "team-a"), Submitter(stack, "team-b")
    first = a.submit()
    wait(lambda: job_started(stack, first) and stack.sql("SELECT status FROM jobs WHERE id=:i", i=first)[0][0]
         in FINISHED, 300, "the warm-up job")
    readers = Readers(stack, args.readers, first)
    readers.start()
    time.sleep(args.idle_s)
    idle = readers.stop()
    print(f"idle: read p99 {p99(idle['read']) * 1000:.0f} ms ({len(idle['read'])} reads, {len(idle['failed'])} "
          f"failed), jobs list p99 {p99(idle['jobs']) * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}",
          file=sys.stderr)

    readers.start()
    t0 = time.monotonic()
    a.many(args.submissions, args.clients)
    burst = readers.stop()
    print(f"burst: {args.submissions} submissions from {args.clients} clients in {time.monotonic() - t0:.1f} s; "
          f"read p99 {p99(burst['read']) * 1000:.0f} ms ({len(burst['read'])} reads, {len(burst['failed'])} failed), "
          f"jobs list p99 {p99(burst['jobs']) * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
    read_ratio = p99(burst["read"]) / max(p99(idle["read"]), 1e-6)
    jobs_p99_ms = p99(burst["jobs"]) * 1000

    # A second tenant while A's backlog waits.
    came = stack.sql("SELECT now()")[0][0]
    running_then = stack.sql("SELECT count(*) FROM jobs WHERE status = 'running'")[0][0]
    theirs = b.submit()
    wait(lambda: job_started(stack, theirs), 600, "tenant B's job to start")
    started = stack.sql("SELECT started_at FROM jobs WHERE id = :i", i=theirs)[0][0]
    fair_wait = stack.sql("SELECT count(*) FROM jobs j JOIN submissions s ON s.id = j.submission_id JOIN api_tokens t "
                          "ON t.id = s.token_id WHERE t.name = 'team-a' AND j.started_at > :came AND "
                          "j.started_at < :started", came=came, started=started)[0][0]
    print(f"tenant B: {fair_wait} of A's jobs started before its job ({running_then} running when it came)",
          file=sys.stderr)

    # A worker SIGKILLed mid-job.
    wait(lambda: bool(stack.sql("SELECT id FROM jobs WHERE status='running' AND worker LIKE 'load0@%'")), 300,
         "a job running on load0")
    victim = stack.sql("SELECT id, attempts FROM jobs WHERE status='running' AND worker LIKE 'load0@%'")[0]
    stack.kill_worker("load0")
    last_beat = stack.sql("SELECT heartbeat_at FROM jobs WHERE id = :i", i=victim[0])[0][0]
    stack.start_worker("load0")
    wait(lambda: job_started(stack, victim[0], victim[1] + 1), 600, "the killed worker's job to start again")
    again = stack.sql("SELECT started_at FROM jobs WHERE id = :i", i=victim[0])[0][0]
    worker_recovery = (again - last_beat).total_seconds()
    print(f"worker SIGKILL: job {victim[0]} started again {worker_recovery:.1f} s after its last heartbeat",
          file=sys.stderr)

    # Redis killed and started again empty; submissions meanwhile.
    stack.kill_redis()
    down = [a.submit() for _ in range(3)]
    stack.start_redis()
    back = time.monotonic()
    backlog_before = stack.sql("SELECT count(*) FROM jobs WHERE status IN ('queued','awaiting_npu')")[0][0]
    started_before = stack.sql("SELECT count(*) FROM jobs WHERE started_at IS NOT NULL")[0][0]
    wait(lambda: stack.sql("SELECT count(*) FROM jobs WHERE started_at IS NOT NULL")[0][0] > started_before, 300,
         "a job to start after the broker restart", step_s=0.1)
    broker_recovery = time.monotonic() - back
    print(f"redis restart: {len(down)} submissions accepted while it was down; a job started {broker_recovery:.1f} s "
          f"after it was back ({backlog_before} waiting)", file=sys.stderr)

    # The API SIGTERMed and started again while a client submits.
    t = threading.Thread(target=lambda: [a.submit() for _ in range(5)])
    t.start()
    stack.stop_api()
    stack.start_api()
    t.join()

    total = len(a.accepted) + len(b.accepted)
    wait(lambda: _all_finished(stack), 3600, "the drain", 1.0)
    subs = stack.sql("SELECT count(*) FROM submissions")[0][0]
    finished = stack.sql("SELECT count(DISTINCT submission_id) FROM jobs WHERE status IN ('succeeded', 'failed')")[0][0]
    dup_results = stack.sql("SELECT count(*) FROM (SELECT job_id, attempt, \"case\" FROM case_results "
                            "GROUP BY job_id, attempt, \"case\" HAVING count(*) > 1) d")[0][0]
    lost = total - finished
    duplicated = dup_results + max(0, subs - total)
    print(f"{total} accepted submissions, {subs} stored, {finished} with a finished job; statuses "
          f"{sorted(set(a.statuses + b.statuses))}", file=sys.stderr)
    print(f"load lost={lost} duplicated={duplicated} read_p99_ratio={read_ratio:.1f} jobs_p99_ms={jobs_p99_ms:.0f} "
          f"fair_wait_jobs={fair_wait} broker_recovery_s={broker_recovery:.1f} worker_recovery_s={worker_recovery:.1f}")
    return 0


def _all_finished(stack: Stack) -> bool:
    return stack.sql("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running', 'awaiting_npu')")[0][0] == 0


if __name__ == "__main__":
    sys.exit(main())
