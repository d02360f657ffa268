"""Bulk seeding for the read benchmarks: operators, submissions, jobs, case results and case states,
as the services would leave them after many nightly runs, fast enough for 10M case results.

Runs are night-major (every operator runs each night, ids interleave across operators), as a nightly
suite stores them: one operator's results are spread over the whole table, not packed together.
PostgreSQL gets COPY for operators and generates the rest itself (INSERT ... SELECT over
generate_series: the same rows, without an hour of Python at 10M), SQLite executemany; case_results' secondary indexes are dropped for the load
and rebuilt after it (faster than maintaining them row by row), then statistics are refreshed.
"""
from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import create_engine, text

from server.services import history_spans

# The spread of verdicts across operators: most pass or are flagged, a few are broken.
VERDICT_WEIGHTS = {"pass": 30, "sim_garbage_npu_ok": 25, "sim_garbage_graph_ok": 15, "awaiting_npu": 10,
                   "kernel_defect": 6, "structural_error": 6, "suspect_fake_pass": 2, "npu_only_fail": 3,
                   "sim_only_error": 3}
# A stored case report: stage timings and a 1.5 KB stderr tail, about what a real SIM case keeps.
REPORT = {"stages": [{"name": n, "status": "ok", "duration_s": d} for n, d in
                     (("syntax", 0.0002), ("lint", 0.0014), ("golden", 0.0044), ("sim", 0.73), ("compare", 0.005))],
          "diagnosis": [], "logs": {"stdout": "", "stderr": "", "plog": ""}}
REPORT_BYTES = 1500
YEAR_H = 365 * 24

OPERATOR_COLS = ("id", "name", "created_at", "updated_at", "combined_verdict", "case_count", "verdict_counts",
                 "sim_verdict", "npu_verdict", "sim_max_abs_diff", "graph_status", "graph_max_abs_diff",
                 "npu_max_abs_diff", "npu_tolerance", "aicore_time_us", "labels")
SUBMISSION_COLS = ("id", "operator", "kind", "filename", "bundle_sha256", "blob_path", "modes", "case_filter",
                   "labels", "branch", "author", "created_by", "created_at")
JOB_COLS = ("id", "submission_id", "operator_id", "mode", "queue", "status", "attempts", "worker", "env_fingerprint",
            "progress", "summary", "timeout_s", "cancel_requested", "submitted_by", "case_count", "duration_s",
            "created_at", "queued_at", "started_at", "finished_at")
RESULT_COLS = ("id", "job_id", "operator_id", "operator", "case", "mode", "attempt", "verdict", "structural", "stage",
               "precision", "output_written", "kernel_launches", "max_abs_diff", "nan_count", "inf_count", "rtol",
               "atol", "shape_match", "dtype_match", "aicore_time_us", "utilization", "graph_status",
               "graph_max_abs_diff", "duration_s", "diagnosis_rules", "branch", "commit", "author", "created_at",
               "report", "source", "source_name", "verified")
STATE_COLS = ("operator_id", "case", "sim_result_id", "npu_result_id", "combined_verdict", "reason", "updated_at")


def _json(value: Any) -> str:
    return json.dumps(value)


def seed(url: str, operators: int, jobs_per_op: int, cases: int, report_bytes: int = REPORT_BYTES,
         depths: tuple[int, ...] | None = None) -> float:
    """Fill a migrated, empty database; returns the seconds it took. Each result's report carries a
    stderr tail of report_bytes. `depths` (default: jobs_per_op for all) gives operator i
    depths[i % len(depths)] runs, each operator's runs spread over the same year."""
    t0 = time.perf_counter()
    rng = random.Random(5)
    now = datetime.now(UTC).replace(microsecond=0)
    depths = depths or (jobs_per_op,)
    verdicts, weights = list(VERDICT_WEIGHTS), list(VERDICT_WEIGHTS.values())
    ops = []
    for i in range(operators):
        v = rng.choices(verdicts, weights)[0]
        labels = {"branch": "main", "author": f"dev{i % 20}"}
        # With mixed depths the name says the depth (bench/depth.py filters the overview on it).
        depth = f"{depths[i % len(depths)]}runs_" if len(depths) > 1 else ""
        ops.append((i + 1, f"op_{i:04d}_{depth}" + rng.choice(["add", "matmul", "softmax", "rmsnorm"]), now,
                    now - timedelta(minutes=i), v, cases, _json({v: cases}), "sim_garbage_graph_ok", "pass", 1.6e35,
                    "pass", 0.0, 2e-4, 1e-3, 4.1, _json(labels)))
    report = _json(dict(REPORT, logs=dict(REPORT["logs"], stderr="x" * report_bytes)))
    engine = create_engine(url)
    try:
        dialect = _Postgres() if engine.dialect.name == "postgresql" else _Sqlite()
        params = {"now": now.timestamp(), "cases": cases, "report": report, "max_runs": max(depths),
                  "n_depths": len(depths), "year_s": YEAR_H * 3600}
        params.update({f"depth{i}": d for i, d in enumerate(depths)})
        _load(engine, dialect, ops, _generated(dialect, len(depths)), params)
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE operators SET latest_sim_job_id = (SELECT max(job_id) FROM case_results r WHERE r.operator_id "
                "= operators.id AND r.mode = 'sim'), latest_npu_job_id = (SELECT max(job_id) FROM case_results r "
                "WHERE r.operator_id = operators.id AND r.mode = 'npu')")
            history_spans.rebuild(conn)  # what the service keeps at write time (docs/history.md §6)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            # VACUUM sets the visibility map as autovacuum does on an insert-only table, so that
            # index-only scans apply as they would in service.
            conn.exec_driver_sql("VACUUM ANALYZE" if engine.dialect.name == "postgresql" else "ANALYZE")
    finally:
        engine.dispose()
    seconds = time.perf_counter() - t0
    jobs = sum(depths[i % len(depths)] for i in range(operators))
    print(f"seeded {operators} operators, {jobs} jobs, {jobs * cases} case results in {seconds:.0f} s", flush=True)
    return seconds


class _Postgres:
    name = "postgresql"
    time = "TIMESTAMPTZ"
    series = "SELECT generate_series(0, :max_runs - 1) AS j"

    def at(self, seconds: str) -> str:
        return f"to_timestamp({seconds})"

    def hex(self, value: str, width: int) -> str:
        return f"lpad(to_hex({value}), {width}, '0')"

    def uniform(self) -> str:
        return "random()"

    def json(self, value: str) -> str:
        return f"CAST(({value}) AS jsonb)"

    def modes(self, mode: str) -> str:
        return f"jsonb_build_array({mode})"


class _Sqlite:
    name = "sqlite"
    time = "TEXT"
    series = "WITH RECURSIVE n(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM n WHERE j < :max_runs - 1) SELECT j FROM n"

    def at(self, seconds: str) -> str:  # SQLAlchemy's SQLite storage: naive UTC text with microseconds
        return f"strftime('%Y-%m-%d %H:%M:%S', {seconds}, 'unixepoch') || '.000000'"

    def hex(self, value: str, width: int) -> str:
        return f"printf('%0{width}x', {value})"

    def uniform(self) -> str:  # [0, 1) from SQLite's 64-bit random()
        return "(random() / 18446744073709551616.0 + 0.5)"

    def json(self, value: str) -> str:
        return value

    def modes(self, mode: str) -> str:
        return f"json_array({mode})"


SUMMARY = "'{\"cases\": ' || :cases || '}'"  # jobs.summary


def _generated(d: Any, n_depths: int) -> list[str]:
    """The rows, generated by the database itself (10M rows through Python cost about an hour on this
    2-core host). Runs are night-major: job ids follow the runs' dates, operators interleaved."""
    depth = "CASE " + " ".join(f"WHEN (o.id - 1) % :n_depths = {i} THEN :depth{i}" for i in range(n_depths)) + " END"
    # Whole hours between runs, the last run an interval before now (as the earlier seeder did).
    spacing = f"(CAST(:year_s / 3600 / ({depth}) AS INTEGER) * 3600)"
    mode = "CASE WHEN j % 3 = 2 THEN 'npu' ELSE 'sim' END"
    created = d.at(f":now - (({depth}) - s.j) * {spacing}")
    u = d.uniform()
    return [
        f"CREATE TEMPORARY TABLE bench_runs (id BIGINT PRIMARY KEY, op INTEGER, mode VARCHAR(8), created {d.time})",
        "INSERT INTO bench_runs (id, op, mode, created) SELECT row_number() OVER (ORDER BY t, op), op, mode, created "
        f"FROM (SELECT o.id AS op, {mode} AS mode, :now - (({depth}) - s.j) * {spacing} AS t, {created} AS created "
        f"FROM operators o JOIN ({d.series}) s ON s.j < {depth}) runs",
        "INSERT INTO submissions (id, operator, kind, filename, bundle_sha256, blob_path, modes, case_filter, labels, "
        f"branch, author, created_by, created_at) SELECT r.id, o.name, 'package', 'k.zip', {d.hex('r.id', 64)}, "
        f"'bundles/none.zip', {d.modes('r.mode')}, '[]', '{{\"branch\": \"main\", \"author\": \"dev\"}}', "
        "'main', 'dev', 'bench', r.created FROM bench_runs r JOIN operators o ON o.id = r.op ORDER BY r.id",
        "INSERT INTO jobs (id, submission_id, operator_id, mode, queue, status, attempts, worker, env_fingerprint, "
        "progress, summary, timeout_s, cancel_requested, submitted_by, case_count, duration_s, created_at, "
        "queued_at, started_at, finished_at) SELECT r.id, r.id, r.op, r.mode, r.mode, 'succeeded', 1, 'bench', '{}', "
        f"'{{}}', {d.json(SUMMARY)}, 600.0, false, 'bench', :cases, 5.0, r.created, r.created, "
        "r.created, r.created FROM bench_runs r ORDER BY r.id",
        "INSERT INTO case_results (id, job_id, operator_id, operator, \"case\", mode, attempt, verdict, structural, "
        "stage, precision, output_written, kernel_launches, max_abs_diff, nan_count, inf_count, rtol, atol, "
        "shape_match, dtype_match, aicore_time_us, utilization, graph_status, graph_max_abs_diff, duration_s, "
        "diagnosis_rules, branch, \"commit\", author, created_at, report, source, source_name, verified) "
        "SELECT (r.id - 1) * :cases + c.j + 1, r.id, r.op, 'op', 'case_' || c.j, r.mode, 1, "
        "CASE WHEN r.mode = 'sim' THEN 'sim_garbage_graph_ok' ELSE 'pass' END, 'ok', 'compare', "
        "CASE WHEN r.mode = 'sim' THEN 'not_applicable' ELSE 'pass' END, r.mode <> 'sim', 1, "
        f"CASE WHEN r.mode = 'sim' THEN 1e30 + {u} * 1e36 ELSE 1e-5 + {u} * 8.9e-4 END, "
        f"CASE WHEN r.mode = 'sim' AND {u} < 0.33 THEN 16384 ELSE 0 END, 0, 1e-3, 1e-3, true, true, "
        f"CASE WHEN r.mode = 'sim' THEN 2 + {u} * 4 END, CASE WHEN r.mode = 'sim' THEN 0.01 + {u} * 0.05 END, "
        "CASE WHEN r.mode = 'sim' THEN 'pass' END, CASE WHEN r.mode = 'sim' THEN 0.0 END, 0.8, '', 'main', "
        f"'c' || {d.hex('r.id % 997', 4)}, 'dev', r.created, {d.json(':report')}, 'worker', 'bench', true "
        f"FROM bench_runs r JOIN ({d.series.replace(':max_runs', ':cases')}) c ON 1 = 1 ORDER BY r.id, c.j",
        "INSERT INTO case_states (operator_id, \"case\", sim_result_id, npu_result_id, combined_verdict, reason, "
        "updated_at) SELECT r.operator_id, r.\"case\", max(CASE WHEN r.mode = 'sim' THEN r.id END), "
        "max(CASE WHEN r.mode = 'npu' THEN r.id END), o.combined_verdict, 'bench', "
        f"{d.at(':now')} FROM case_results r JOIN operators o ON o.id = r.operator_id "
        "GROUP BY r.operator_id, r.\"case\", o.combined_verdict",
        "DROP TABLE bench_runs",
    ]


def _load(engine: Any, d: Any, ops: list[tuple[Any, ...]], statements: list[str], params: dict[str, Any]) -> None:
    """Operators from Python, the rest generated; case_results' secondary indexes are dropped for the
    load and rebuilt after it (faster than maintaining them row by row)."""
    raw = engine.raw_connection()
    try:
        db = raw.driver_connection
        if d.name == "postgresql":
            with db.cursor() as cur:
                cur.execute("SET maintenance_work_mem = '512MB'")
                cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'case_results' "
                            "AND indexname NOT LIKE 'pk_%'")
                indexes = cur.fetchall()
                for name, _ in indexes:
                    cur.execute(f'DROP INDEX "{name}"')
                with cur.copy(f"COPY operators ({', '.join(_quoted(c) for c in OPERATOR_COLS)}) FROM STDIN") as copy:
                    copy.write("".join("\t".join(_pg_text(v) for v in row) + "\n" for row in ops))
            db.commit()
        else:
            db.execute("PRAGMA synchronous = OFF")
            db.execute("PRAGMA journal_mode = OFF")  # a bench database: a crash mid-seed means seeding again
            db.execute("PRAGMA cache_size = -262144")
            indexes = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND "
                                 "tbl_name = 'case_results' AND sql IS NOT NULL").fetchall()
            for name, _ in indexes:
                db.execute(f'DROP INDEX "{name}"')
            db.executemany(f"INSERT INTO operators ({', '.join(_quoted(c) for c in OPERATOR_COLS)}) VALUES "
                           f"({', '.join('?' * len(OPERATOR_COLS))})", [tuple(_sqlite_value(v) for v in r) for r in ops])
            db.commit()
    finally:
        raw.close()
    with engine.begin() as conn:
        if d.name == "postgresql":
            conn.exec_driver_sql("SET synchronous_commit = off")
        for sql in statements:
            conn.execute(text(sql), params)
    raw = engine.raw_connection()
    try:
        db = raw.driver_connection
        if d.name == "postgresql":
            with db.cursor() as cur:
                cur.execute("SET maintenance_work_mem = '512MB'")
                for _, definition in indexes:
                    cur.execute(definition)
        else:
            for _, definition in indexes:
                db.execute(definition)
        db.commit()
        if d.name == "sqlite":
            db.execute("PRAGMA journal_mode = WAL")
    finally:
        raw.close()


def _quoted(column: str) -> str:
    return f'"{column}"'


def _pg_text(v: Any) -> str:
    """A value in COPY's text format."""
    if v is None:
        return "\\N"
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, str):
        return v.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    return repr(v) if isinstance(v, float) else str(v)


def _sqlite_value(v: Any) -> Any:
    """SQLAlchemy's SQLite storage: naive UTC 'YYYY-MM-DD HH:MM:SS.ffffff' text for times."""
    if isinstance(v, datetime):
        return v.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    return v


PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
KEEP_DIR = "/tmp/crosscheck-bench"


def database(postgres: bool, name: str, tmp: str, sizes: tuple[int, int, int], keep: bool,
             report_bytes: int = REPORT_BYTES, depths: tuple[int, ...] | None = None) -> tuple[str, Any]:
    """(url, cleanup) of a migrated and seeded database. With keep, the database is named by its sizes,
    survives the run and is reused by the next run with the same sizes (seed once, measure twice)."""
    from pathlib import Path

    from sqlalchemy import text

    from server.config import Settings
    from server.migrate import upgrade

    label = "o{}_j{}_c{}_r{}".format(*sizes, report_bytes) + ("_d" + "_".join(map(str, depths)) if depths else "")
    admin = create_engine(PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    db_name = f"crosscheck_bench_{label}" if keep else name
    if postgres:
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{db_name}"
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": db_name}).first()
            if exists and not keep:
                conn.execute(text(f"DROP DATABASE {db_name} WITH (FORCE)"))
            if not exists or not keep:
                conn.execute(text(f"CREATE DATABASE {db_name}"))
    else:
        folder = Path(KEEP_DIR if keep else tmp)
        folder.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{folder / (label + '.db' if keep else 'bench.db')}"
    resolved = Settings(database_url=url).resolved_database_url
    upgrade(resolved)
    engine = create_engine(resolved)
    with engine.connect() as conn:
        have = conn.execute(text("SELECT count(*) FROM case_results")).scalar()
    engine.dispose()
    depths = depths or (sizes[1],)
    wanted = sum(depths[i % len(depths)] for i in range(sizes[0])) * sizes[2]
    if have == wanted and keep:
        print(f"reusing {url} ({have} case results)", flush=True)
    elif have:
        raise SystemExit(f"{url} holds {have} case results, not {wanted}: drop it first")
    else:
        seed(resolved, *sizes, report_bytes=report_bytes, depths=depths)

    def cleanup() -> None:
        from server import db

        db.reset_caches()
        if postgres and not keep:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"))
        admin.dispose()

    return url, cleanup
