"""An operator page costs the same at 1,000 runs of history as at 100 (docs/history.md §7), counted
without a clock: on SQLite the virtual machine's steps, on PostgreSQL the rows its plans read under
EXPLAIN ANALYZE, summed over every statement a request sends. Two operators share one database and
one year: `shallow` ran 100 times in it, `deep` 1,000 times."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from server.config import Settings
from server.main import create_app
from server.migrate import upgrade
from server.models import CaseResult, CaseState, Job, Operator, Submission
from server.models.base import utcnow
from server.services import history_spans, results, tokens
from tests.server.conftest import PgSchema
from tests.signin import sign_in

DEPTHS = {"shallow": 100, "deep": 1000}  # runs in the last year
CASES = 4
# Deep may cost this much more than shallow: the counts are exact, but the deep operator's first
# chunk of jobs is 108 (history._runs), the shallow one's its 100, and its indexes one level deeper.
SLACK, SLACK_UNITS = 1.05, 10
SQLITE_STEPS = 100
HISTORY_TABLES = ("FROM jobs", "FROM case_results", "FROM history_spans")  # the progress handler is called every this many VM instructions


def _seed(engine: sa.Engine) -> None:
    """Each operator's runs spread evenly over the last year, then its row
    and spans as the services keep them."""
    now = utcnow().replace(microsecond=0)
    subs, jobs, rows, states = [], [], [], []
    for op_id, (name, runs) in enumerate(DEPTHS.items(), start=1):
        latest = {}
        for r in range(runs):
            at = now - timedelta(days=365) + timedelta(days=365) * (r + 1) / runs - timedelta(minutes=5)
            # SIM only: both operators have more runs in a year than the year view's 50 buckets, so
            # that both years are drawn from the spans (a mode with fewer is read run by run).
            mode, job = "sim", len(jobs) + 1
            subs.append({"id": job, "operator": name, "kind": "package", "filename": "k.zip",
                         "bundle_sha256": "0" * 64, "blob_path": "none", "created_at": at})
            jobs.append({"id": job, "submission_id": job, "operator_id": op_id, "mode": mode, "queue": mode,
                         "status": "succeeded", "timeout_s": 60.0, "created_at": at, "queued_at": at})
            for c in range(CASES):
                rows.append({"id": len(rows) + 1, "job_id": job, "operator_id": op_id, "operator": name,
                             "case": f"case_{c}", "mode": mode, "verdict": "pass", "structural": "ok",
                             "precision": "pass", "max_abs_diff": 1e-5 * (1 + (r * 7 + c) % 13), "atol": 1e-3,
                             "graph_status": "fail" if (r + c) % 11 == 0 else "pass", "branch": "main",
                             "commit": f"c{r // 3}", "created_at": at, "report": {"logs": {"stderr": "x" * 500}}})
                latest[(c, mode)] = len(rows)
        states += [{"operator_id": op_id, "case": f"case_{c}", "combined_verdict": "pass",
                    "sim_result_id": latest[(c, "sim")], "npu_result_id": None} for c in range(CASES)]
    with engine.begin() as conn:
        conn.execute(sa.insert(Operator), [{"id": i, "name": n, "labels": {"branch": "main"}}
                                           for i, n in enumerate(DEPTHS, start=1)])
        for model, values in ((Submission, subs), (Job, jobs), (CaseResult, rows), (CaseState, states)):
            conn.execute(sa.insert(model), values)
        history_spans.rebuild(conn)
    with sa.orm.Session(engine) as session:
        for op_id in range(1, len(DEPTHS) + 1):
            results.refresh_operator(session, op_id)
        session.commit()
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM ANALYZE"))  # as autovacuum leaves an insert-only table
    else:
        with engine.begin() as conn:
            conn.execute(sa.text("ANALYZE"))


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def depth_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    data = tmp_path_factory.mktemp("depth")
    schema = None
    if request.param == "sqlite":
        url = f"sqlite:///{data / 'crosscheck.db'}"
    else:
        from tests.server.conftest import pg_unreachable

        if (why := pg_unreachable()) is not None:
            pytest.skip(why)
        schema = PgSchema("depth")
        url = schema.url
    settings = Settings(data_dir=Path(data), database_url=url)
    upgrade(settings.resolved_database_url)
    app = create_app(settings, start_sweeper=False)
    _seed(app.state.engine)
    yield app
    app.state.engine.dispose()
    if schema is not None:
        schema.drop()


def _reads_history(statement: str) -> bool:
    """A read of the tables that grow with depth; the rest of a page (the operator's row and cases,
    drift, tokens) costs the same for both and would only dilute the comparison."""
    return statement.lstrip().upper().startswith("SELECT") and any(t in statement for t in HISTORY_TABLES)


def _sqlite_cost(app: FastAPI, get: Callable[[], Any]) -> int:
    """VM steps (in units of SQLITE_STEPS) of the request's reads of its history."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0  # go on

    def arm(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        counted = tick if _reads_history(statement) else None
        conn.connection.dbapi_connection.set_progress_handler(counted, SQLITE_STEPS)

    sa.event.listen(app.state.engine, "before_cursor_execute", arm)
    try:
        get()
    finally:
        sa.event.remove(app.state.engine, "before_cursor_execute", arm)
    return steps[0]


def _rows_read(plan: dict[str, Any]) -> float:
    """Rows a plan's scans read: returned and filtered out, times their loops."""
    own = 0.0
    if "Scan" in plan["Node Type"]:
        read = plan["Actual Rows"] + plan.get("Rows Removed by Filter", 0) + plan.get("Rows Removed by Index Recheck", 0)
        own = read * plan["Actual Loops"]
    return own + sum(_rows_read(p) for p in plan.get("Plans", []))


def _pg_cost(app: FastAPI, get: Callable[[], Any]) -> int:
    """Rows read by the request's reads of its history, each re-run under EXPLAIN ANALYZE."""
    sent: list[tuple[str, Any]] = []

    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if _reads_history(statement):
            sent.append((statement, parameters))

    sa.event.listen(app.state.engine, "before_cursor_execute", record)
    try:
        get()
    finally:
        sa.event.remove(app.state.engine, "before_cursor_execute", record)
    total = 0.0
    raw = app.state.engine.raw_connection()
    try:
        cur = raw.cursor()
        # Planned as on a large table: on these few thousand rows PostgreSQL would rather read all of
        # them, shallow and deep alike, than use an index (tests/server/test_explain.py guards that).
        cur.execute("SET enable_seqscan = off")
        for statement, parameters in sent:
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
            doc = cur.fetchone()[0]
            total += _rows_read((json.loads(doc) if isinstance(doc, str) else doc)[0]["Plan"])
    finally:
        raw.close()
    return round(total)


PAGES = {"operator page": "/operators/{name}", "operator page, year": "/operators/{name}?range=1y",
         "history API": "/api/v1/operators/{name}/history",
         # A year in 50 buckets from a span boundary, as the year view asks it. (In 200 buckets it reads
         # a day's span per day and mode that ran: bounded by the days, not the runs; docs/history.md §7.)
         "history API, a year": "/api/v1/operators/{name}/history?since={since}&buckets=50"}


@pytest.mark.parametrize("page", list(PAGES))
def test_deep_operator_reads_no_more_than_shallow(depth_app: FastAPI, page: str) -> None:
    with depth_app.state.sessionmaker.begin() as session:
        secret = tokens.create(session, f"depth {page}", ["read"])[1]
    cost = _sqlite_cost if depth_app.state.engine.dialect.name == "sqlite" else _pg_cost
    spent = {}
    with TestClient(depth_app) as client:
        client.headers["Authorization"] = f"Bearer {secret}"
        sign_in(client, secret)
        for name in DEPTHS:
            first = history_spans.epoch_day(utcnow() - timedelta(days=365)) // history_spans.SPAN_DAYS
            since = history_spans.day_start(first * history_spans.SPAN_DAYS).strftime("%Y-%m-%dT%H:%M:%SZ")
            url = PAGES[page].format(name=name, since=since)
            assert client.get(url).status_code == 200, url  # warm: the app's first-request work is not counted

            def get(url: str = url) -> None:
                assert client.get(url).status_code == 200, url

            spent[name] = cost(depth_app, get)
    assert spent["shallow"] > 0
    assert spent["deep"] <= spent["shallow"] * SLACK + SLACK_UNITS, spent
