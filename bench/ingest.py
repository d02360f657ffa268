"""Ingest throughput (issue 10): 10,000 cases in one upload must be stored in <= 5 s.

Serves the real app with uvicorn on a free localhost port and POSTs, over HTTP, a pytest JUnit file
of 10,000 testcases (100 operators x 100 tests, with a metrics sidecar) and a runtime JSON report of
10,000 cases; each is timed from the first byte sent to the answer (parse, validate, store, suite
run totals, commit). Then the same uploads again: the idempotent replay that stores nothing.

    python bench/ingest.py                  # SQLite (the default setup)
    python bench/ingest.py --postgres       # PostgreSQL on 127.0.0.1 (a database of its own)
"""
from __future__ import annotations

import argparse
import copy
import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
from sqlalchemy import create_engine, text

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from server.config import Settings  # noqa: E402
from server.migrate import upgrade  # noqa: E402
from server.services import tokens  # noqa: E402

TARGET_S = 5.0
PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PG_DB = "crosscheck_bench_ingest"
NPU_ENV = {"pypto": "0.2.0", "torch": "2.13.0", "cann": "8.0.RC3", "device": "npu:0"}
SAMPLE_REPORT = REPO / "tests" / "server" / "fixtures" / "scale_add_sim.json"


def junit(operators: int, per_op: int) -> tuple[bytes, bytes]:
    """A pytest-shaped JUnit file and its metrics sidecar."""
    parts = ['<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
             f'tests="{operators * per_op}">']
    side: dict[str, Any] = {"environment": NPU_ENV, "cases": {}}
    for o in range(operators):
        cls = f"ops.op{o:03d}.test_op{o:03d}"
        for c in range(per_op):
            name = f"test_op{o:03d}[case{c:03d}]"
            body = ""
            if c % 17 == 0:
                body = '<failure message="assert 0.03 &lt; 0.001">AssertionError: max diff</failure>'
            elif c % 29 == 0:
                body = '<skipped message="needs 2 cards"/>'
            parts.append(f'<testcase classname="{cls}" name="{name}" time="0.{c:03d}">{body}</testcase>')
            side["cases"][f"{cls}::{name}"] = {"max_abs_diff": 1e-4 * (c + 1), "atol": 1e-3, "rtol": 1e-3}
    parts.append("</testsuite></testsuites>")
    return "".join(parts).encode(), json.dumps(side).encode()


def report(cases: int) -> bytes:
    """One operator's runtime report with `cases` NPU cases (the real scale_add case, renamed)."""
    base = json.loads(SAMPLE_REPORT.read_text())
    template = base["cases"][0]
    base["mode"], base["environment"] = "npu", {**base["environment"], **NPU_ENV}
    out = []
    for i in range(cases):
        case = copy.deepcopy(template)
        case.update(case=f"case_{i:05d}", verdict="pass", precision="pass", output_written=True, graph_verify=None)
        out.append(case)
    base["cases"] = out
    return json.dumps(base).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(settings: Settings) -> tuple[str, Any, threading.Thread]:
    import uvicorn

    from server.main import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, start_sweeper=False), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server, thread


def timed(fn: Any) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = fn()
    return time.perf_counter() - start, response


def run(settings: Settings, label: str, cases: int) -> list[tuple[str, str, int, float, str]]:
    upgrade(settings.resolved_database_url)
    engine = create_engine(settings.resolved_database_url)
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        secret = tokens.create(session, "bench-lab", ["submit"])[1]
        session.commit()
    engine.dispose()
    xml, side = junit(100, cases // 100)
    rep = report(cases)
    base, server, thread = serve(settings)
    rows = []
    try:
        with httpx.Client(base_url=base + "/api/v1", headers={"Authorization": f"Bearer {secret}"},
                          timeout=600) as http:
            for attempt in ("first", "replay"):
                s, r = timed(lambda: http.post("/ingest/junit", params={"suite": "bench", "run_key": "junit-1"},
                                               files={"junit": ("junit.xml", xml), "metrics": ("m.json", side)}))
                assert r.status_code == 200, r.text[:500]
                rows.append((label, f"JUnit ({len(xml) / 2**20:.1f} MiB + sidecar), {attempt}", cases, s,
                             f"stored {r.json()['stored']}, duplicates {r.json()['duplicates']}"))
                s, r = timed(lambda: http.post("/ingest/report", params={"suite": "bench", "run_key": "report-1"},
                                               content=rep, headers={"Content-Type": "application/json"}))
                assert r.status_code == 200, r.text[:500]
                rows.append((label, f"runtime report ({len(rep) / 2**20:.1f} MiB), {attempt}", cases, s,
                             f"stored {r.json()['stored']}, duplicates {r.json()['duplicates']}"))
    finally:
        server.should_exit = True
        thread.join(30)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL at 127.0.0.1:5432")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        data = Path(tmp)
        rows += run(Settings(data_dir=data, database_url=f"sqlite:///{data / 'bench.db'}",
                             max_ingest_bytes=256 * 2**20), "SQLite", args.cases)
        if args.postgres:
            admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {PG_DB}"))
                conn.execute(text(f"CREATE DATABASE {PG_DB}"))
            try:
                url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{PG_DB}"
                rows += run(Settings(data_dir=data / "pg", database_url=url, max_ingest_bytes=256 * 2**20),
                            "PostgreSQL", args.cases)
            finally:
                with admin.connect() as conn:
                    conn.execute(text(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)"))
                admin.dispose()
    print(f"| database | upload | cases | seconds | cases/s | vs target {TARGET_S:.0f} s | answer |")
    print("|---|---|---|---|---|---|---|")
    for label, what, n, s, answer in rows:
        print(f"| {label} | {what} | {n:,} | {s:.2f} | {n / s:,.0f} | {s / TARGET_S:.2f}x | {answer} |")
    firsts = [s for _, what, _, s, _ in rows if "first" in what]
    print(f"\nslowest first upload: {max(firsts):.2f} s (target <= {TARGET_S:.0f} s): "
          f"{'met' if max(firsts) <= TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
