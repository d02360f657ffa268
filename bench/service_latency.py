"""Submit-to-result latency through the service, side by side with `crosscheck run` (issue 4 target ≤ 1.2x).

    python bench/service_latency.py [--repeat 5] [--example relu] [--postgres-redis]

Starts `crosscheck up` (API + one SIM worker) on a temp data dir: the embedded SQLite database and
broker by default, PostgreSQL + Redis with --postgres-redis. After one warm-up job (the worker's warm
parent starting), it alternates: (a) POST the example and poll GET /jobs/{id} every 50 ms until it is
finished, (b) `crosscheck run <example>` as a fresh process, as a developer runs it.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx2 as httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from client.submit import bundle  # noqa: E402

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PG_DB = "crosscheck_bench_latency"
REDIS = "redis://127.0.0.1:6379/12"
FINISHED = ("succeeded", "failed", "error", "cancelled", "timeout")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def service_once(client: httpx.Client, filename: str, data: bytes) -> float:
    start = time.perf_counter()
    r = client.post("/submissions", data={"modes": ["sim"]}, files={"file": (filename, data)},
                    headers={"Idempotency-Key": uuid.uuid4().hex})
    r.raise_for_status()
    job_id = r.json()["jobs"][0]["id"]
    while True:
        job = client.get(f"/jobs/{job_id}").json()
        if job["status"] in FINISHED:
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - start
    assert job["status"] == "succeeded", job
    return elapsed


def run_once(example: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "server.cli", "run", str(example)], env=env, check=True,
                   capture_output=True, cwd=REPO)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--example", default="relu")
    ap.add_argument("--postgres-redis", action="store_true")
    args = ap.parse_args()
    example = REPO / "examples" / args.example
    filename, data = bundle(example)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BROKER_URL", "DATA_DIR")}
    admin = None
    if args.postgres_redis:
        from sqlalchemy import create_engine, text

        admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)"))
            conn.execute(text(f"CREATE DATABASE {PG_DB}"))
        import redis

        redis.Redis.from_url(REDIS).flushdb()
        env.update(DATABASE_URL=PG_ADMIN.replace("+psycopg", "").rsplit("/", 1)[0] + f"/{PG_DB}", BROKER_URL=REDIS)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        log = open(Path(tmp) / "up.log", "wb")
        up = subprocess.Popen([sys.executable, "-m", "server.cli", "up", "--data-dir", tmp, "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(url + "/readyz", timeout=2).status_code == 200 and (Path(tmp) / "tokens.json").exists():
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or up.poll() is not None:
                    raise SystemExit("crosscheck up did not start:\n" + (Path(tmp) / "up.log").read_text()[-3000:])
                time.sleep(0.5)
            token = json.loads((Path(tmp) / "tokens.json").read_text())["admin"]
            token = token["secret"] if isinstance(token, dict) else token
            with httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {token}"},
                              timeout=60) as client:
                service_once(client, filename, data)  # warm-up: the worker's warm parent starts
                service, direct = [], []
                for _ in range(args.repeat):
                    service.append(service_once(client, filename, data))
                    direct.append(run_once(example, env))
        finally:
            os.killpg(up.pid, signal.SIGINT)
            try:
                up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
            log.close()
            if admin is not None:
                from sqlalchemy import text

                with admin.connect() as conn:
                    conn.execute(text(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)"))
    backend = "PostgreSQL + Redis" if args.postgres_redis else "SQLite + embedded SQLite broker"
    s, d = statistics.median(service), statistics.median(direct)
    print(f"{backend}, example {args.example}, median of {args.repeat}:")
    print(f"  service submit -> result : {s:6.2f} s   (min {min(service):.2f}, max {max(service):.2f})")
    print(f"  crosscheck run           : {d:6.2f} s   (min {min(direct):.2f}, max {max(direct):.2f})")
    print(f"  ratio service / run      : {s / d:6.2f}")


if __name__ == "__main__":
    main()
