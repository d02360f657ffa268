"""EXPLAIN guard: the hot reads (history, the operator page, the overview) never scan case_results
or history_spans sequentially on a seeded PostgreSQL (docs/history.md §4).

Every statement the real endpoints send is captured at the driver, then EXPLAINed with its own
parameters against statistics from ANALYZE; a `Seq Scan on case_results` in any plan fails."""
from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from server import migrate
from server.config import Settings
from server.main import create_app
from server.models import CaseResult, CaseState, Job, Operator, Submission
from server.services import history_spans, tokens
from tests.signin import sign_in

pytestmark = pytest.mark.postgres
OPERATORS, RUNS, CASES = 40, 250, 4  # 40,000 case results: enough for the planner to prefer indexes
# Stored rows carry their runtime report (log tails): about 1 KB here, more in service. Row width is
# what makes a scan of the table dear against its indexes, so the test keeps it realistic.
REPORT = {"logs": {"stderr": "x" * 1000}}
NOW = datetime(2026, 6, 1, tzinfo=UTC)
TABLES = ("case_results", "history_spans")  # the large ones (the spans: the year view, docs/history.md §6)


def _seed(engine: sa.Engine) -> None:
    rng = random.Random(15)
    ops, subs, jobs, results, states = [], [], [], [], []
    for o in range(1, OPERATORS + 1):
        ops.append({"id": o, "name": f"op_{o:03d}", "combined_verdict": rng.choice(["pass", "kernel_defect"]),
                    "case_count": CASES, "verdict_counts": {}, "labels": {"branch": "main", "author": f"dev{o % 5}"},
                    "updated_at": NOW})
        for r in range(RUNS):
            job = (o - 1) * RUNS + r + 1
            mode, at = ("npu" if r % 3 == 2 else "sim"), NOW - timedelta(days=RUNS - r)
            subs.append({"id": job, "operator": f"op_{o:03d}", "kind": "package", "filename": "k.zip",
                         "bundle_sha256": "0" * 64, "blob_path": "none", "created_at": at})
            jobs.append({"id": job, "submission_id": job, "operator_id": o, "mode": mode, "queue": mode,
                         "status": "succeeded", "timeout_s": 60.0, "created_at": at, "queued_at": at})
            for c in range(CASES):
                results.append({"id": len(results) + 1, "job_id": job, "operator_id": o, "operator": f"op_{o:03d}",
                                "case": f"case_{c}", "mode": mode, "verdict": "pass", "structural": "ok",
                                "precision": "pass", "max_abs_diff": rng.uniform(1e-5, 1e-3), "atol": 1e-3,
                                "branch": "main", "commit": f"c{r}", "created_at": at, "report": REPORT})
        states += [{"operator_id": o, "case": f"case_{c}", "combined_verdict": "pass",
                    "sim_result_id": len(results) - CASES * 2 + c + 1, "npu_result_id": None} for c in range(CASES)]
    with engine.begin() as conn:
        for model, rows in ((Operator, ops), (Submission, subs), (Job, jobs), (CaseResult, results),
                            (CaseState, states)):
            conn.execute(sa.insert(model), rows)
        history_spans.rebuild(conn)  # as the services keep them (docs/history.md §6)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM ANALYZE"))  # as autovacuum leaves an insert-only table


@pytest.fixture
def seeded_app(pg_fresh_schema, tmp_path):
    settings = Settings(database_url=pg_fresh_schema.url, data_dir=tmp_path)
    migrate.upgrade(settings.resolved_database_url)
    app = create_app(settings, start_sweeper=False)
    _seed(app.state.engine)
    yield app
    app.state.engine.dispose()


def _captured(app: Any, urls: list[str]) -> list[tuple[str, Any]]:
    sent: list[tuple[str, Any]] = []

    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if any(t in statement for t in TABLES) and statement.lstrip().upper().startswith("SELECT"):
            sent.append((statement, parameters))

    with app.state.sessionmaker.begin() as session:
        secret = tokens.create(session, "explain", ["read"])[1]
    sa.event.listen(app.state.engine, "before_cursor_execute", record)
    try:
        with TestClient(app) as client:
            client.headers["Authorization"] = f"Bearer {secret}"
            sign_in(client, secret)
            for url in urls:
                assert client.get(url).status_code == 200, url
    finally:
        sa.event.remove(app.state.engine, "before_cursor_execute", record)
    return sent


def test_hot_reads_use_indexes_on_case_results(seeded_app):
    name, cursor_job = "op_020", 19 * RUNS + 150
    since = (NOW - timedelta(days=200)).isoformat().replace("+00:00", "Z")
    urls = [f"/api/v1/operators/{name}/history", f"/api/v1/operators/{name}/history?mode=npu&limit=20",
            f"/api/v1/operators/{name}/history?cursor={cursor_job}",
            f"/api/v1/operators/{name}/history?since={since}&buckets=50",
            f"/api/v1/operators/{name}", "/api/v1/operators", f"/api/v1/cases?operator={name}&mode=sim",
            f"/operators/{name}", f"/operators/{name}?range=1y", "/", "/?verdict=kernel_defect",
            f"/api/v1/operators/{name}/history?case=case_1", f"/operators/{name}?case=case_2&range=1y"]
    statements = _captured(seeded_app, urls)
    assert len(statements) >= len(urls)  # every page read case_results at least once
    scans = []
    raw = seeded_app.state.engine.raw_connection()
    try:
        cur = raw.cursor()
        for statement, parameters in statements:
            cur.execute("EXPLAIN " + statement, parameters)
            plan = "\n".join(row[0] for row in cur.fetchall())
            if any(f"Seq Scan on {t}" in plan for t in TABLES):
                scans.append(f"{statement}\n{plan}")
    finally:
        raw.close()
    assert not scans, "sequential scan over a large table:\n\n" + "\n\n".join(scans)
