"""Does a page cost the same at 100 runs per operator as at 1,000? (issue 20)

One database holds both depths side by side: every other operator has 100 runs, the others 1,000,
each spread over the same year, 10 cases a run (bench/seed.py). Every endpoint and page is timed
for a shallow and a deep operator in alternation (each round one request of each, in a shuffled
order), in process (routing, auth, queries, rendering; no network), so a busy machine slows both
alike; the claim is the ratio p99 deep / p99 shallow, not the absolute time. Targets: ratio <= 1.2
for the history API, the operator page, its year view and the overview (200 rows a page).

The ratios are given twice: raw, and net of the garbage collections that ran within each request
(timed by a gc callback). A full collection costs more than a whole history request and lands on
whichever request is running when the process's allocations cross the threshold, so at a few ms a
request it alone decides a p99 of raw times (docs/history.md §7). The last line (`depth-ratio`, as
issue 20 defines it) and the exit code are raw; the line before it (`depth-ratio-net`) is net of them.

    python bench/depth.py --quick                  # SQLite, about 200k rows, under 3 minutes
    python bench/depth.py --rows 1000000 [--postgres] [--keep]
    python bench/depth.py --rows 1000000 10000000 --postgres --seed-only   # seed once, kept
    python bench/depth.py --rows 1000000 10000000 --postgres --keep --requests 200

Several sizes are measured in one run, each database's requests after the other's, and a line
`size-ratio history=<r> page=<r> overview=<r> year=<r>` gives p99 at the largest over p99 at the
smallest. The last line is `depth-ratio history=<r> page=<r> overview=<r> year=<r>` (the largest).
"""
from __future__ import annotations

import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
# Run as `python bench/depth.py`, bench/ comes first on sys.path, where a file named as a standard-library
# module would stand in for it (bench/bisect.py did, until renamed): bench/ goes last.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != BENCH] + [BENCH]
sys.path.insert(0, os.path.dirname(BENCH))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from sqlalchemy import text  # noqa: E402

import gc  # noqa: E402
from seed import REPORT_BYTES, database  # noqa: E402

from server.config import Settings  # noqa: E402
from server.services import history_spans, tokens  # noqa: E402
from tests.signin import sign_in  # noqa: E402

PG_DB = "crosscheck_bench_depth"
SHALLOW, DEEP, CASES = 100, 1000, 10
TARGET_RATIO = 1.2
TARGET_SIZE_RATIO = 1.3
OVERVIEW_ROWS = 200
QUICK_ROWS = 200_000
# The summary line's names: endpoint label -> key.
HEADLINE = {"history API": "history", "operator page": "page", "overview, 200 rows": "overview",
            "operator page, year": "year"}


def endpoints(name: str, depth: int, year: str, per_page: int = OVERVIEW_ROWS) -> list[tuple[str, str]]:
    """(label, url) for an operator of this depth; the overview shows the operators of this depth."""
    return [("history API", f"/api/v1/operators/{name}/history"),
            ("history API ?mode=sim", f"/api/v1/operators/{name}/history?mode=sim"),
            ("history API, a year in 200 buckets", f"/api/v1/operators/{name}/history?since={year}&buckets=200"),
            ("cases API", f"/api/v1/cases?operator={name}&mode=sim&limit=100"),
            ("operator page", f"/operators/{name}"),
            ("operator page, year", f"/operators/{name}?range=1y"),
            ("overview, 200 rows", f"/?q={depth}runs&per_page={per_page}")]  # "100runs" is no part of "1000runs"


_COLLECTIONS = [0.0, 0.0]  # when the running garbage collection started, ms of collections so far


def _on_collection(phase: str, _info: dict[str, Any]) -> None:
    if phase == "start":
        _COLLECTIONS[0] = time.perf_counter()
    else:
        _COLLECTIONS[1] += (time.perf_counter() - _COLLECTIONS[0]) * 1000


def timed_app(app: Any) -> tuple[Any, list[tuple[float, float]]]:
    """Wrap an ASGI app; the list collects each HTTP request's (server ms, ms of garbage collections within it).

    A full collection (15-22 ms here, measured by this hook) runs when the whole process's allocations cross
    a threshold, so it lands on whichever request is running then, at either depth; with a fixed request order
    it can land on the same slot round after round (docs/history.md §7)."""
    rows: list[tuple[float, float]] = []

    async def timed(scope: Any, receive: Any, send: Any) -> None:
        start, collected = time.perf_counter(), _COLLECTIONS[1]
        await app(scope, receive, send)
        if scope["type"] == "http":
            rows.append(((time.perf_counter() - start) * 1000, _COLLECTIONS[1] - collected))

    return timed, rows


def _client(settings: Settings) -> tuple[Any, Any, dict[int, list[str]]]:
    """(TestClient, its (server ms, collection ms) rows, depth -> operator names) of one seeded database, signed in."""
    from fastapi.testclient import TestClient

    from server.main import create_app

    app = create_app(settings, start_sweeper=False)
    with app.state.sessionmaker() as session:
        secret = tokens.create(session, "bench", ["read"])[1]
        session.commit()
        every = list(session.scalars(text("SELECT name FROM operators ORDER BY id")))
        names = {d: [n for n in every if f"_{d}runs_" in n][:5] for d in (SHALLOW, DEEP)}
    if not names[SHALLOW] or not names[DEEP]:
        raise SystemExit("the database holds no operators of both depths: seed it with bench/depth.py")
    timed, server_ms = timed_app(app)
    client = TestClient(timed)
    client.headers["Authorization"] = f"Bearer {secret}"
    sign_in(client, secret)
    return client, server_ms, names


# label -> {"shallow": ms..., "deep": ms..., "shallow net": ms..., "deep net": ms...}; "net": the request's
# server time less the garbage collections that ran within it.
Results = dict[str, dict[str, list[float]]]


def measure(databases: list[Settings], requests: int, per_page: int = OVERVIEW_ROWS) -> list[Results]:
    """Per round and endpoint, one request per database and depth, in an order shuffled each round (seeded):
    the load of the moment falls on all alike, and no slot of a fixed order keeps catching the process's
    periodic full garbage collection. The overview shows `per_page` rows of operators of one depth."""
    # The year as the operator page asks it: from a span boundary, whole spans only (docs/history.md §7).
    year = history_spans.aligned_since(datetime.now(UTC), 365).strftime("%Y-%m-%dT%H:%M:%SZ")
    clients = [_client(settings) for settings in databases]
    out: list[Results] = [{} for _ in databases]
    labels = [label for label, _ in endpoints("x", SHALLOW, year)]
    slots = [(n, depth, kind) for n in range(len(clients)) for depth, kind in ((SHALLOW, "shallow"), (DEEP, "deep"))]
    order = random.Random(20)
    for client, _, _ in clients:
        client.__enter__()
    gc.callbacks.append(_on_collection)
    try:
        for i in range(requests + 3):  # 3 warm-up rounds, not counted
            if i and i % 20 == 0:
                print(f"  round {i} of {requests + 3}, load average {os.getloadavg()[0]:.1f}", file=sys.stderr,
                      flush=True)
            for k, label in enumerate(labels):
                order.shuffle(slots)
                for n, depth, kind in slots:
                    client, rows, names = clients[n]
                    url = endpoints(names[depth][i % len(names[depth])], depth, year, per_page)[k][1]
                    rows.clear()
                    response = client.get(url)
                    assert response.status_code == 200, (url, response.status_code, response.text[:300])
                    if i >= 3:
                        by_kind = out[n].setdefault(label, {})
                        by_kind.setdefault(kind, []).extend(ms for ms, _ in rows)
                        by_kind.setdefault(f"{kind} net", []).extend(ms - collected for ms, collected in rows)
    finally:
        gc.callbacks.remove(_on_collection)
        for client, _, _ in clients:
            client.__exit__(None, None, None)
    return out


def p99(times: list[float]) -> float:
    """Interpolated between the samples as numpy's default does ("inclusive"); the "exclusive" method used before
    2026-12-06 extrapolates past the slowest request when there are fewer than 100 (60 at --quick)."""
    return statistics.quantiles(times, n=100, method="inclusive")[98] if len(times) >= 2 else times[0]


def report(results: Results) -> dict[str, float]:
    """The table of one database; returns the p99 ratios net of garbage collection (`ratio`)."""
    print(f"\n| {'endpoint':<36} | {'100 runs p50 / p99':>18} | {'1,000 runs p50 / p99':>20} | p50 ratio | p99 ratio "
          f"| p99 net of gc, 100 / 1,000 | p99 ratio net of gc |")
    print(f"|{'-' * 38}|{'-' * 20}|{'-' * 22}|{'-' * 11}|{'-' * 11}|{'-' * 28}|{'-' * 21}|")
    ratios = {}
    for label, by in results.items():
        a, b = by["shallow"], by["deep"]
        ratios[label] = ratio(by)
        print(f"| {label:<36} | {statistics.median(a):7.1f} / {p99(a):7.1f} | {statistics.median(b):8.1f} / "
              f"{p99(b):8.1f} | {statistics.median(b) / statistics.median(a):9.2f} | {p99(b) / p99(a):9.2f} "
              f"| {p99(by['shallow net']):11.1f} / {p99(by['deep net']):11.1f} | {ratios[label]:19.2f} |")
    return ratios


def ratio(by: dict[str, list[float]], raw: bool = False) -> float:
    """p99 deep over p99 shallow: net of the garbage collections within the requests, or `raw`."""
    suffix = "" if raw else " net"
    return p99(by["deep" + suffix]) / p99(by["shallow" + suffix])


def size_ratios(small: Results, large: Results, raw: bool = False) -> dict[str, float]:
    """p99 at the larger database over p99 at the smaller, per headline endpoint (both depths' requests),
    net of garbage collection unless `raw`."""
    s = "" if raw else " net"
    return {key: p99(large[label]["shallow" + s] + large[label]["deep" + s])
            / p99(small[label]["shallow" + s] + small[label]["deep" + s]) for label, key in HEADLINE.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"SQLite, about {QUICK_ROWS:,} rows, 60 requests each")
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000],
                    help="case results in all, about; several sizes are measured interleaved, with a size ratio")
    ap.add_argument("--requests", type=int, default=100, help="timed requests per endpoint and depth")
    ap.add_argument("--postgres", action="store_true", help="a dedicated database on the local PostgreSQL")
    ap.add_argument("--report-bytes", type=int, default=REPORT_BYTES, help="stderr tail in each stored report")
    ap.add_argument("--keep", action="store_true", help="keep the seeded database for the next run (bench/seed.py)")
    ap.add_argument("--seed-only", action="store_true", help="seed and keep the databases, measure nothing")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.requests, args.postgres = [QUICK_ROWS], min(args.requests, 60), False
    args.keep = args.keep or args.seed_only
    pair = (SHALLOW + DEEP) * CASES  # the rows of one shallow and one deep operator
    sizes = sorted(2 * max(1, round(rows / pair)) for rows in args.rows)  # operators per database
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-depth-") as tmp, contextlib.ExitStack() as stack:
        databases = []
        for n, operators in enumerate(sizes):
            folder = Path(tmp) / str(n)
            folder.mkdir()
            seeded = time.perf_counter()
            url, cleanup = database(args.postgres, f"{PG_DB}_{n}", str(folder), (operators, DEEP, CASES), args.keep,
                                    args.report_bytes, depths=(SHALLOW, DEEP))
            stack.callback(cleanup)
            print(f"{url}: ready in {time.perf_counter() - seeded:.0f} s, load average {os.getloadavg()[0]:.1f}",
                  flush=True)
            databases.append(Settings(data_dir=folder, database_url=url))
        if args.seed_only:
            return 0
        # The same overview page in every database: a small one may hold fewer than 200 operators of a
        # depth (1M: 91), and a size ratio of 91 rows against 200 would measure the rows, not the size.
        per_page = min(OVERVIEW_ROWS, sizes[0] // 2)
        load = os.getloadavg()
        results = measure(databases, args.requests, per_page)
        after = os.getloadavg()
        for operators, by_label in zip(sizes, results):
            print(f"\n{'PostgreSQL' if args.postgres else 'SQLite'}: {operators} operators ({operators // 2} with "
                  f"{SHALLOW} runs, {operators // 2} with {DEEP}), {operators // 2 * pair:,} case results; "
                  f"{args.requests} requests per endpoint and depth, interleaved; server ms in process; the "
                  f"overview shows {min(per_page, operators // 2)} rows")
            ratios = report(by_label)
            if len(results) > 1:
                print("depth-ratio " + " ".join(f"{key}={ratio(by_label[label], True):.2f}" for label, key in HEADLINE.items())
                      + "; net of gc " + " ".join(f"{key}={ratios[label]:.2f}" for label, key in HEADLINE.items()))
        print(f"\nload average {load[0]:.1f} before, {after[0]:.1f} after (1 min); {time.perf_counter() - t0:.0f} s "
              f"in all; target: p99 ratio <= {TARGET_RATIO} (depth), <= {TARGET_SIZE_RATIO} (size)")
    ok = all(r[label]["deep"] and ratio(r[label], True) <= TARGET_RATIO for r in results for label in HEADLINE)
    if len(results) > 1:
        by_size = size_ratios(results[0], results[-1], True)
        ok = ok and all(v <= TARGET_SIZE_RATIO for v in by_size.values())
        print("size-ratio-net " + " ".join(f"{key}={v:.2f}" for key, v in size_ratios(results[0], results[-1]).items()))
        print(f"size-ratio ({sizes[-1] // 2 * pair:,} over {sizes[0] // 2 * pair:,} case results) "
              + " ".join(f"{key}={v:.2f}" for key, v in by_size.items()))
    # The largest database's depth ratios come last, raw: the line scripts read.
    print("depth-ratio-net " + " ".join(f"{key}={ratio(results[-1][label]):.2f}" for label, key in HEADLINE.items()))
    print("depth-ratio " + " ".join(f"{key}={ratio(results[-1][label], True):.2f}" for label, key in HEADLINE.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
