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


def seed(url: str, operators: int, jobs_per_op: int, cases: int, report_bytes: int = REPORT_BYTES) -> float:
    """Fill a migrated, empty database; returns the seconds it took. Each result's report carries a
    stderr tail of report_bytes."""
    t0 = time.perf_counter()
    rng = random.Random(5)
    now = datetime.now(UTC).replace(microsecond=0)
    spacing = timedelta(hours=max(1, YEAR_H // max(1, jobs_per_op)))  # the runs span about a year
    verdicts, weights = list(VERDICT_WEIGHTS), list(VERDICT_WEIGHTS.values())
    ops = []
    for i in range(operators):
        v = rng.choices(verdicts, weights)[0]
        labels = {"branch": "main", "author": f"dev{i % 20}"}
        ops.append((i + 1, f"op_{i:04d}_" + rng.choice(["add", "matmul", "softmax", "rmsnorm"]), now,
                    now - timedelta(minutes=i), v, cases, _json({v: cases}), "sim_garbage_graph_ok", "pass", 1.6e35,
                    "pass", 0.0, 2e-4, 1e-3, 4.1, _json(labels)))
    latest: dict[tuple[int, int, str], int] = {}

    def runs() -> Iterator[tuple[int, int, str, datetime]]:  # (job id, operator id, mode, date), night-major
        job = 0
        for j in range(jobs_per_op):
            created = now - spacing * (jobs_per_op - j)
            for op in ops:
                job += 1
                yield job, op[0], ("npu" if j % 3 == 2 else "sim"), created

    def submissions() -> Iterator[tuple[Any, ...]]:
        names = {op[0]: op[1] for op in ops}
        for job, op_id, mode, created in runs():
            yield (job, names[op_id], "package", "k.zip", f"{job:064x}", "bundles/none.zip", _json([mode]),
                   _json([]), _json({"branch": "main", "author": "dev"}), "main", "dev", "bench", created)

    def jobs() -> Iterator[tuple[Any, ...]]:
        summary = _json({"cases": cases})
        for job, op_id, mode, created in runs():
            yield (job, job, op_id, mode, mode, "succeeded", 1, "bench", _json({}), _json({}), summary, 600.0,
                   False, "bench", cases, 5.0, created, created, created, created)

    report = _json(dict(REPORT, logs=dict(REPORT["logs"], stderr="x" * report_bytes)))

    def results() -> Iterator[tuple[Any, ...]]:
        rid = 0
        for job, op_id, mode, created in runs():
            sim = mode == "sim"
            for c in range(cases):
                rid += 1
                latest[(op_id, c, mode)] = rid
                yield (rid, job, op_id, "op", f"case_{c}", mode, 1, "sim_garbage_graph_ok" if sim else "pass", "ok",
                       "compare", "not_applicable" if sim else "pass", not sim, 1,
                       rng.uniform(1e30, 1e36) if sim else rng.uniform(1e-5, 9e-4),
                       rng.choice([0, 0, 16384]) if sim else 0, 0, 1e-3, 1e-3, True, True,
                       rng.uniform(2, 6) if sim else None, rng.uniform(0.01, 0.06) if sim else None,
                       "pass" if sim else None, 0.0 if sim else None, 0.8, "", "main", f"c{job % 997:04x}", "dev",
                       created, report, "worker", "bench", True)

    def states() -> Iterator[tuple[Any, ...]]:
        for op in ops:
            for c in range(cases):
                yield (op[0], f"case_{c}", latest.get((op[0], c, "sim")), latest.get((op[0], c, "npu")), op[4],
                       "bench", now)

    engine = create_engine(url)
    try:
        if engine.dialect.name == "postgresql":
            _postgres(engine, [("operators", OPERATOR_COLS, ops)], _server_side(now, spacing, jobs_per_op, cases, report))
        else:
            _sqlite(engine, [("operators", OPERATOR_COLS, ops), ("submissions", SUBMISSION_COLS, submissions()),
                             ("jobs", JOB_COLS, jobs()), ("case_results", RESULT_COLS, results()),
                             ("case_states", STATE_COLS, states())])
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE operators SET latest_sim_job_id = (SELECT max(job_id) FROM case_results r WHERE r.operator_id "
                "= operators.id AND r.mode = 'sim'), latest_npu_job_id = (SELECT max(job_id) FROM case_results r "
                "WHERE r.operator_id = operators.id AND r.mode = 'npu')")
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            # VACUUM sets the visibility map as autovacuum does on an insert-only table, so that
            # index-only scans apply as they would in service.
            conn.exec_driver_sql("VACUUM ANALYZE" if engine.dialect.name == "postgresql" else "ANALYZE")
    finally:
        engine.dispose()
    seconds = time.perf_counter() - t0
    print(f"seeded {operators} operators, {operators * jobs_per_op} jobs, {operators * jobs_per_op * cases} case "
          f"results in {seconds:.0f} s", flush=True)
    return seconds


Tables = list[tuple[str, tuple[str, ...], Iterable[tuple[Any, ...]]]]


def _server_side(now: datetime, spacing: timedelta, jobs_per_op: int, cases: int,
                 report: str) -> list[tuple[str, dict[str, Any]]]:
    """The same rows as the SQLite path (night-major ids, a year of runs), generated by PostgreSQL
    itself: 10M rows through Python cost about an hour on this 2-core host, in the server minutes."""
    nights = ("FROM generate_series(0, :jobs - 1) AS j CROSS JOIN operators o")
    job_id = "(j * (SELECT count(*) FROM operators) + o.id)"
    created = ":now - (:jobs - j) * :spacing * interval '1 second'"
    mode = "CASE WHEN j % 3 = 2 THEN 'npu' ELSE 'sim' END"
    params = {"jobs": jobs_per_op, "now": now, "spacing": spacing.total_seconds(), "cases": cases, "report": report}
    return [
        (f"INSERT INTO submissions (id, operator, kind, filename, bundle_sha256, blob_path, modes, case_filter, labels, "
         f"branch, author, created_by, created_at) SELECT {job_id}, o.name, 'package', 'k.zip', "
         f"lpad(to_hex({job_id}), 64, '0'), 'bundles/none.zip', jsonb_build_array({mode}), '[]', "
         f"'{{\"branch\": \"main\", \"author\": \"dev\"}}', 'main', 'dev', 'bench', {created} {nights} ORDER BY j, o.id", params),
        (f"INSERT INTO jobs (id, submission_id, operator_id, mode, queue, status, attempts, worker, env_fingerprint, "
         f"progress, summary, timeout_s, cancel_requested, submitted_by, case_count, duration_s, created_at, "
         f"queued_at, started_at, finished_at) SELECT {job_id}, {job_id}, o.id, {mode}, {mode}, 'succeeded', 1, "
         f"'bench', '{{}}', '{{}}', jsonb_build_object('cases', :cases), 600.0, false, 'bench', :cases, 5.0, "
         f"{created}, {created}, {created}, {created} {nights} ORDER BY j, o.id", params),
        ("INSERT INTO case_results (id, job_id, operator_id, operator, \"case\", mode, attempt, verdict, structural, "
         "stage, precision, output_written, kernel_launches, max_abs_diff, nan_count, inf_count, rtol, atol, "
         "shape_match, dtype_match, aicore_time_us, utilization, graph_status, graph_max_abs_diff, duration_s, "
         "diagnosis_rules, branch, \"commit\", author, created_at, report, source, source_name, verified) "
         "SELECT (j.id - 1) * :cases + c + 1, j.id, j.operator_id, 'op', 'case_' || c, j.mode, 1, "
         "CASE WHEN j.mode = 'sim' THEN 'sim_garbage_graph_ok' ELSE 'pass' END, 'ok', 'compare', "
         "CASE WHEN j.mode = 'sim' THEN 'not_applicable' ELSE 'pass' END, j.mode <> 'sim', 1, "
         "CASE WHEN j.mode = 'sim' THEN 1e30 + random() * 1e36 ELSE 1e-5 + random() * 8.9e-4 END, "
         "CASE WHEN j.mode = 'sim' AND random() < 0.33 THEN 16384 ELSE 0 END, 0, 1e-3, 1e-3, true, true, "
         "CASE WHEN j.mode = 'sim' THEN 2 + random() * 4 END, CASE WHEN j.mode = 'sim' THEN 0.01 + random() * 0.05 END, "
         "CASE WHEN j.mode = 'sim' THEN 'pass' END, CASE WHEN j.mode = 'sim' THEN 0.0 END, 0.8, '', 'main', "
         "'c' || lpad(to_hex(j.id % 997), 4, '0'), 'dev', j.created_at, rep.r, 'worker', 'bench', "
         "true FROM (SELECT CAST(:report AS jsonb) AS r) AS rep, jobs j CROSS JOIN LATERAL generate_series(0, :cases - 1 + 0 * j.id) AS c", params),  # jobs outer
        ("INSERT INTO case_states (operator_id, \"case\", sim_result_id, npu_result_id, combined_verdict, reason, "
         "updated_at) SELECT r.operator_id, r.\"case\", max(r.id) FILTER (WHERE r.mode = 'sim'), "
         "max(r.id) FILTER (WHERE r.mode = 'npu'), o.combined_verdict, 'bench', :now FROM case_results r "
         "JOIN operators o ON o.id = r.operator_id GROUP BY r.operator_id, r.\"case\", o.combined_verdict", params),
    ]


def _postgres(engine: Any, tables: Tables, statements: list[tuple[str, dict[str, Any]]]) -> None:
    raw = engine.raw_connection()
    try:
        pg = raw.driver_connection
        with pg.cursor() as cur:
            cur.execute("SET synchronous_commit = off")
            cur.execute("SET maintenance_work_mem = '512MB'")
            cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'case_results' "
                        "AND indexname NOT LIKE 'pk_%'")
            indexes = cur.fetchall()
            for name, _ in indexes:
                cur.execute(f'DROP INDEX "{name}"')
            for table, cols, rows in tables:
                with cur.copy(f"COPY {table} ({', '.join(_quoted(c) for c in cols)}) FROM STDIN") as copy:
                    buf: list[str] = []
                    for row in rows:
                        buf.append("\t".join(_pg_text(v) for v in row))
                        if len(buf) >= 5000:
                            copy.write("\n".join(buf) + "\n")
                            buf = []
                    if buf:
                        copy.write("\n".join(buf) + "\n")
        pg.commit()
        with engine.begin() as conn:
            for sql, params in statements:
                conn.execute(text(sql), params)
        with pg.cursor() as cur:
            cur.execute("SET maintenance_work_mem = '512MB'")
            for _, definition in indexes:
                cur.execute(definition)
        pg.commit()
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


def _sqlite(engine: Any, tables: Tables) -> None:
    raw = engine.raw_connection()
    try:
        db = raw.driver_connection
        db.execute("PRAGMA synchronous = OFF")
        db.execute("PRAGMA journal_mode = OFF")  # a bench database: a crash mid-seed means seeding again
        indexes = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'case_results' "
                             "AND sql IS NOT NULL").fetchall()
        for name, _ in indexes:
            db.execute(f'DROP INDEX "{name}"')
        for table, cols, rows in tables:
            sql = f"INSERT INTO {table} ({', '.join(_quoted(c) for c in cols)}) VALUES ({', '.join('?' * len(cols))})"
            batch: list[tuple[Any, ...]] = []
            for row in rows:
                batch.append(tuple(_sqlite_value(v) for v in row))
                if len(batch) >= 20000:
                    db.executemany(sql, batch)
                    batch = []
            if batch:
                db.executemany(sql, batch)
            db.commit()
        for _, definition in indexes:
            db.execute(definition)
        db.commit()
        db.execute("PRAGMA journal_mode = WAL")
    finally:
        raw.close()


def _sqlite_value(v: Any) -> Any:
    """SQLAlchemy's SQLite storage: naive UTC 'YYYY-MM-DD HH:MM:SS.ffffff' text for times."""
    if isinstance(v, datetime):
        return v.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    return v


PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
KEEP_DIR = "/tmp/crosscheck-bench"


def database(postgres: bool, name: str, tmp: str, sizes: tuple[int, int, int], keep: bool,
             report_bytes: int = REPORT_BYTES) -> tuple[str, Any]:
    """(url, cleanup) of a migrated and seeded database. With keep, the database is named by its sizes,
    survives the run and is reused by the next run with the same sizes (seed once, measure twice)."""
    from pathlib import Path

    from sqlalchemy import text

    from server.config import Settings
    from server.migrate import upgrade

    label = "o{}_j{}_c{}_r{}".format(*sizes, report_bytes)
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
    wanted = sizes[0] * sizes[1] * sizes[2]
    if have == wanted and keep:
        print(f"reusing {url} ({have} case results)", flush=True)
    elif have:
        raise SystemExit(f"{url} holds {have} case results, not {wanted}: drop it first")
    else:
        seed(resolved, *sizes, report_bytes=report_bytes)

    def cleanup() -> None:
        from server import db

        db.reset_caches()
        if postgres and not keep:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"))
        admin.dispose()

    return url, cleanup
