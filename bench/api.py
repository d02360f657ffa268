"""API read latency at scale (issue 4's benchmark): 1k operators x 100 jobs x 10 cases = 1M case results;
with --depth, 1,000 runs per operator (issue 15's): 10M case results, or 1M with --operators 100.

Seeds a dedicated database in bulk (bench/seed.py), then times, in process (routing, auth, queries,
serialization; no network), p50 and p99 of /operators, /operators/{name}/history (the default last
100 runs, a cursor page back, a year in 200 min/max buckets) and filtered /cases. Target: p99 <= 100 ms.

    python bench/api.py                      # the full 1M rows on PostgreSQL
    python bench/api.py --depth              # 10M rows, 1,000 runs per operator, on PostgreSQL
    python bench/api.py --depth --operators 100 --sqlite   # 1M rows on SQLite
    python bench/api.py --operators 100 --jobs 10 --requests 20   # a quick look
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from dashboard import DEPTH_CASES, DEPTH_RUNS, timed_app  # noqa: E402
from seed import REPORT_BYTES, database  # noqa: E402

from server.config import Settings  # noqa: E402
from server.services import tokens  # noqa: E402

PG_DB = "crosscheck_bench_api"
TARGET_P99_MS = 100.0


def measure(settings: Settings, requests: int, operators: int) -> list[tuple[str, list[float]]]:
    from fastapi.testclient import TestClient

    from server.main import create_app

    app = create_app(settings, start_sweeper=False)
    with app.state.sessionmaker() as session:
        secret = tokens.create(session, "bench", ["read"])[1]
        session.commit()
        name = session.scalar(text("SELECT name FROM operators WHERE id = :id"), {"id": max(1, operators // 2)})
        job = session.scalar(text("SELECT min(id) FROM (SELECT id FROM jobs WHERE operator_id = :id "
                                  "ORDER BY created_at DESC, id DESC LIMIT 100) newest"), {"id": max(1, operators // 2)})
    year = (datetime.now(UTC) - timedelta(days=365)).strftime("%Y-%m-%dT%H:%M:%SZ")
    urls = ["/api/v1/operators", "/api/v1/operators?verdict=kernel_defect&verdict=structural_error&limit=50",
            f"/api/v1/operators/{name}/history", f"/api/v1/operators/{name}/history?mode=sim",
            f"/api/v1/operators/{name}/history?cursor={job}", f"/api/v1/operators/{name}/history?since={year}&buckets=200",
            "/api/v1/cases?verdict=pass&mode=npu&limit=100", f"/api/v1/cases?operator={name}&mode=sim&limit=100",
            "/api/v1/cases?branch=main&limit=100"]
    timed, server_ms = timed_app(app)
    out = []
    with TestClient(timed) as client:
        client.headers["Authorization"] = f"Bearer {secret}"
        for url in urls:
            for _ in range(3):
                assert client.get(url).status_code == 200, url
            server_ms.clear()
            cursor_urls = [url]
            for i in range(requests):
                response = client.get(cursor_urls[-1] if i % 2 else url)
                assert response.status_code == 200, (url, response.text[:300])
                nxt = response.json().get("next_cursor") if "/cases" in url else None
                if nxt:
                    cursor_urls.append(f"{url}&cursor={nxt}")  # also time deeper pages
            out.append((url, list(server_ms)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--operators", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--depth", action="store_true", help=f"{DEPTH_RUNS} runs per operator, {DEPTH_CASES} cases each")
    ap.add_argument("--sqlite", action="store_true", help="SQLite in a temp dir instead of PostgreSQL")
    ap.add_argument("--report-bytes", type=int, default=REPORT_BYTES, help="stderr tail in each stored report")
    ap.add_argument("--keep", action="store_true", help="keep the seeded database for the next run (bench/seed.py)")
    args = ap.parse_args()
    if args.depth:
        args.jobs, args.cases = DEPTH_RUNS, DEPTH_CASES
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        url, cleanup = database(not args.sqlite, PG_DB, tmp, (args.operators, args.jobs, args.cases), args.keep,
                                args.report_bytes)
        try:
            settings = Settings(data_dir=Path(tmp), database_url=url)
            print(f"\n{'SQLite' if args.sqlite else 'PostgreSQL'}, {args.requests} requests per endpoint")
            print(f"\n| {'endpoint':<78} | {'p50 ms':>7} | {'p99 ms':>7} | ok  |")
            print(f"|{'-' * 80}|{'-' * 9}|{'-' * 9}|-----|")
            for endpoint, times in measure(settings, args.requests, args.operators):
                p50 = statistics.median(times)
                p99 = statistics.quantiles(times, n=100)[98]
                ok &= p99 <= TARGET_P99_MS
                print(f"| {endpoint[:78]:<78} | {p50:7.1f} | {p99:7.1f} | {'yes' if p99 <= TARGET_P99_MS else 'NO':<3} |")
        finally:
            cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
