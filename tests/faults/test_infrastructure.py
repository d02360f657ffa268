"""Faults in what the service stands on: the API killed mid-upload, a Redis restart with queued jobs,
PostgreSQL stopped while a worker reports. Private processes only: a Redis and a PostgreSQL cluster of
this test's own on free ports; the shared ones on 6379 and 5432 are never touched."""
from __future__ import annotations

import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.conftest import missing_service
from tests.e2e.conftest import FINISHED, Stack, free_port
from tests.faults.conftest import SLEEPER, env_for, results_of, submit_sleeper

pytestmark = pytest.mark.slow
KEY = "upload-killed-1"


def _count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_the_api_killed_during_an_upload_leaves_no_partial_rows(fault_stack: Stack) -> None:
    from client.submit import bundle
    from tests.conftest import EXAMPLES

    filename, data = bundle(EXAMPLES / "relu")
    boundary = "faultboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    head = (f"POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1:{fault_stack.port}\r\n"
            f"Authorization: Bearer {fault_stack.env['CROSSCHECK_TOKEN']}\r\nIdempotency-Key: {KEY}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", fault_stack.port)) as sock:
        sock.sendall(head + body[: len(body) // 2])  # half the upload is in the API
        time.sleep(1.0)
        assert fault_stack.api is not None
        fault_stack.api.kill()  # SIGKILL mid-request
        fault_stack.api.wait()
    db = Path(fault_stack.env["DATA_DIR"]) / "crosscheck.db"
    assert (_count(db, "submissions"), _count(db, "jobs")) == (0, 0)  # nothing half-made
    fault_stack.start_api()
    headers = {"Idempotency-Key": KEY}
    first = fault_stack.http.post("/submissions", files={"file": (filename, data)}, headers=headers)
    again = fault_stack.http.post("/submissions", files={"file": (filename, data)}, headers=headers)
    assert (first.status_code, again.status_code) == (202, 200), (first.text, again.text)
    assert first.json() == again.json()
    assert (_count(db, "submissions"), _count(db, "jobs")) == (1, 1)
    print("faults: API SIGKILLed mid-upload: 0 partial rows; the retry with the same key stored it once")


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A redis-server of this test's own, without persistence (a restart loses every message)."""
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        procs.append(subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", str(tmp_path)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        Stack.wait(lambda: _redis_up(port), 30, f"the private redis on {port}")

    if shutil.which("redis-server") is None:
        missing_service("redis-server is not installed")
    start()
    yield port, procs, start  # type: ignore[misc]
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _redis_up(port: int) -> bool:
    import redis

    try:
        return bool(redis.Redis(port=port, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def test_a_redis_restart_with_queued_jobs_loses_none(tmp_path: Path, calculator_cache: Path, private_redis) -> None:
    port, procs, start = private_redis
    env = env_for(tmp_path / "data", calculator_cache, BROKER_URL=f"redis://127.0.0.1:{port}/0")
    stack = Stack("redis", env, tmp_path)
    try:
        stack.start_api()
        jobs = [submit_sleeper(stack, seconds=1)["jobs"][0]["id"] for _ in range(3)]
        import redis

        assert redis.Redis(port=port).dbsize() >= 1  # the messages wait in Redis: no worker yet
        procs[-1].kill()  # Redis restarts without its data: the three messages are gone
        procs[-1].wait()
        start()
        assert redis.Redis(port=port).dbsize() == 0
        stack.start_worker("after-restart")
        finished = [stack.wait_job(j, FINISHED, deadline_s=600) for j in jobs]
        lost = [j["id"] for j in finished if j["status"] not in ("succeeded", "failed")]
        duplicated = [j for j in jobs if len(results_of(stack, j)) != 1]
        print(f"faults: Redis restarted without its data under {len(jobs)} queued jobs: lost {len(lost)}, "
              f"duplicated {len(duplicated)}")
        assert not lost and not duplicated, finished
    finally:
        stack.stop()


@pytest.fixture
def private_postgres(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A throwaway PostgreSQL cluster (initdb as the postgres user) on a free port; (url, data dir)."""
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None or shutil.which("runuser") is None:
        missing_service("initdb, pg_ctl and runuser are needed for a private PostgreSQL cluster")
    data = Path(tempfile.gettempdir()) / f"crosscheck-faults-pg-{free_port()}"
    data.mkdir()
    shutil.chown(data, "postgres", "postgres")
    port = free_port()
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_pg, "initdb", "-D", str(data), "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True)
    ctl = [*as_pg, "pg_ctl", "-D", str(data), "-o", f"-p {port} -k /tmp -c listen_addresses=127.0.0.1",
           "-l", str(data / "log"), "-w"]
    subprocess.run([*ctl, "start"], check=True, capture_output=True)
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        yield url, data
    finally:
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def test_postgres_stopped_while_a_worker_reports(tmp_path: Path, calculator_cache: Path, private_postgres) -> None:
    url, data = private_postgres
    port = url.rsplit(":", 1)[1].split("/")[0]
    ctl = ["runuser", "-u", "postgres", "--", "pg_ctl", "-D", str(data), "-o",
           f"-p {port} -k /tmp -c listen_addresses=127.0.0.1", "-l", str(data / "log"), "-w"]
    env = env_for(tmp_path / "data", calculator_cache, DATABASE_URL=url)
    stack = Stack("pg", env, tmp_path)
    try:
        stack.start_api()
        stack.start_worker("reporter")
        job = submit_sleeper(stack, seconds=8)["jobs"][0]["id"]
        stack.wait_job(job, ("running",), deadline_s=300)
        subprocess.run([*ctl, "-m", "fast", "stop"], check=True, capture_output=True)  # down while it reports
        log_file = tmp_path / "worker-reporter.log"
        deadline = time.monotonic() + 300  # the sleeper ends and its worker tries to post its result meanwhile
        reported = f"api.retry POST /internal/jobs/{job}/result"
        while reported not in log_file.read_text() and time.monotonic() < deadline:
            time.sleep(1)  # however slow a loaded host is, the outage lasts until a report met it
        time.sleep(5)
        subprocess.run([*ctl, "start"], check=True, capture_output=True)
        done = stack.wait_job(job, FINISHED, deadline_s=600)
        rows = results_of(stack, job)
        print(f"faults: PostgreSQL stopped while the worker reported: job {done['status']}, "
              f"{len(rows)} result row(s)")
        assert done["status"] in ("succeeded", "failed") and len(rows) == done["case_count"] == 1
        assert reported in log_file.read_text()  # the result did meet the outage and was retried
    finally:
        stack.stop()
