"""The overview before and after a change, on one database, in alternation (issue 20).

Two processes serve the same seeded database, one with this checkout's code and one with the code of
an earlier commit (`git archive` into a temp folder); each request goes to one, then the other
(A B A B ...), so a busy machine slows both alike. Each process times its own requests in process
(routing, auth, queries, rendering; no network) and reports server ms. The database is migrated by
this checkout; the earlier code is given the newer migrations so that it starts on that schema, and
ignores the columns it does not know.

    python bench/overview.py --before 7fe9c97                       # SQLite, 400 operators x 10 runs x 10 cases
    python bench/overview.py --before 7fe9c97 --postgres --runs 100 # 400,000 results on PostgreSQL

Targets (bench/dashboard.py): overview p99 <= 300 ms with 200 rows.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH))

from seed import database  # noqa: E402

PG_DB = "crosscheck_bench_overview"
URLS = ("/?per_page=200", "/")
TARGET_MS = 300.0
# One code version serving the database: a line in (a URL), a line out (server ms and bytes).
SERVE = """
import json, sys, tempfile, time
from pathlib import Path
repo, url = sys.argv[1], sys.argv[2]
sys.path.insert(0, repo)
from fastapi.testclient import TestClient
from server.config import Settings
from server.main import create_app
from server.services import tokens
from tests.signin import sign_in
app = create_app(Settings(data_dir=Path(tempfile.mkdtemp()), database_url=url), start_sweeper=False)
with app.state.sessionmaker() as s:
    secret = tokens.create(s, "bench", ["read"])[1]
    s.commit()
ms = []
async def timed(scope, receive, send):
    t = time.perf_counter()
    await app(scope, receive, send)
    if scope["type"] == "http":
        ms.append((time.perf_counter() - t) * 1000)
with TestClient(timed) as client:
    sign_in(client, secret)
    print("ready", flush=True)
    for line in sys.stdin:
        ms.clear()
        r = client.get(line.strip())
        print(json.dumps({"status": r.status_code, "ms": ms[-1], "bytes": len(r.content)}), flush=True)
"""


def checkout(rev: str, into: str) -> Path:
    """The tree of an earlier commit, unpacked (no worktree, nothing of the repo's state touched)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    # The database is at this checkout's schema: the earlier code is told of the newer revisions,
    # which only add what it does not read, so that it starts on it (server/migrate.py checks the head).
    for migration in (REPO / "migrations" / "versions").glob("*.py"):
        if not (Path(into) / "migrations" / "versions" / migration.name).exists():
            (Path(into) / "migrations" / "versions" / migration.name).write_bytes(migration.read_bytes())
    return Path(into)


def serve(repo: Path, url: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(repo), url], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=str(repo))
    assert proc.stdout and proc.stdout.readline().strip() == "ready", f"{repo} did not start"
    return proc


def ask(proc: subprocess.Popen[str], url: str) -> dict[str, float]:
    assert proc.stdin and proc.stdout
    proc.stdin.write(url + "\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["status"] == 200, (url, answer)
    return answer


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98] if len(times) >= 2 else times[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the earlier commit to compare with (e.g. 7fe9c97)")
    ap.add_argument("--operators", type=int, default=400)
    ap.add_argument("--runs", type=int, default=10, help="runs per operator")
    ap.add_argument("--cases", type=int, default=10, help="cases per run")
    ap.add_argument("--requests", type=int, default=60, help="timed requests per URL and version")
    ap.add_argument("--postgres", action="store_true")
    ap.add_argument("--report-bytes", type=int, default=100, help="stderr tail in each stored report")
    ap.add_argument("--keep", action="store_true", help="keep the seeded database (bench/seed.py)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-overview-") as tmp:
        url, cleanup = database(args.postgres, PG_DB, tmp, (args.operators, args.runs, args.cases), args.keep,
                                args.report_bytes)
        from server.config import Settings

        url = Settings(database_url=url).resolved_database_url
        old = checkout(args.before, tempfile.mkdtemp(dir=tmp))
        procs = {"before": serve(old, url), "after": serve(REPO, url)}
        out: dict[str, dict[str, list[float]]] = {u: {"before": [], "after": []} for u in URLS}
        size: dict[str, dict[str, int]] = {u: {} for u in URLS}
        load = os.getloadavg()[0]
        try:
            for i in range(args.requests + 3):  # 3 warm-up rounds, not counted
                for u in URLS:
                    for kind, proc in procs.items():
                        answer = ask(proc, u)
                        size[u][kind] = int(answer["bytes"])
                        if i >= 3:
                            out[u][kind].append(answer["ms"])
        finally:
            for proc in procs.values():
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=60)
            cleanup()
    after_load = os.getloadavg()[0]
    print(f"\n{'PostgreSQL' if args.postgres else 'SQLite'}: {args.operators} operators x {args.runs} runs x "
          f"{args.cases} cases; before = {args.before}, after = this checkout; {args.requests} requests each, "
          "alternated; server ms in process")
    print(f"| {'page':<16} | {'before p50 / p99':>18} | {'after p50 / p99':>17} | {'p50 after/before':>16} | "
          f"{'bytes before -> after':>23} |")
    print(f"|{'-' * 18}|{'-' * 20}|{'-' * 19}|{'-' * 18}|{'-' * 25}|")
    for u in URLS:
        a, b = out[u]["before"], out[u]["after"]
        print(f"| {u:<16} | {statistics.median(a):7.1f} / {p99(a):7.1f} | {statistics.median(b):6.1f} / "
              f"{p99(b):7.1f} | {statistics.median(b) / statistics.median(a):16.2f} | "
              f"{size[u]['before']:>10,} -> {size[u]['after']:>9,} |")
    print(f"\nload average {load:.1f} before, {after_load:.1f} after (1 min); {time.perf_counter() - t0:.0f} s in all; "
          f"target: p99 <= {TARGET_MS:.0f} ms with 200 rows")
    return 0 if p99(out[URLS[0]]["after"]) <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
