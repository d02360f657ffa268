"""The overview reads one row per operator (docs/dashboard.md §6): the SQL it sends is the same for 20
rows as for 200, for 10 runs of history as for 100, for 2 cases a row as for 10, and it never reads a
case; the case counts the row shows are the ones its cases give."""
from __future__ import annotations

import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from server.migrate import upgrade
from server.models import CaseResult, CaseState, Job, Operator, Submission
from server.services import coverage, results, tokens
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.signin import sign_in

ROWS = 200
# name prefix -> (runs per operator, cases per run)
GROUPS = {"shallow": (10, 2), "deep": (100, 2), "wide": (10, 10)}
NOW = datetime(2026, 6, 1, tzinfo=UTC)
CASE_TABLES = ("case_results", "case_states", "history_spans")


def _seed(session: Any) -> None:
    """ROWS operators per group, their runs inserted in bulk as the services store them (SIM nightly,
    every third run on the NPU too), then each operator's row refreshed by the service itself."""
    rng = random.Random(20)
    subs, jobs, rows, states = [], [], [], []
    op_id = 0
    for prefix, (runs, cases) in GROUPS.items():
        for i in range(ROWS):
            op_id += 1
            name = f"{prefix}_op_{i:03d}"
            session.add(Operator(id=op_id, name=name, labels={"branch": "main"}))
            latest: dict[tuple[str, str], int] = {}
            for r in range(runs):
                at = NOW - timedelta(days=runs - r)
                for mode in ("sim", "npu") if r % 3 == 2 else ("sim",):
                    job = len(jobs) + 1
                    subs.append({"id": job, "operator": name, "kind": "package", "filename": "k.zip",
                                 "bundle_sha256": "0" * 64, "blob_path": "none", "created_at": at})
                    jobs.append({"id": job, "submission_id": job, "operator_id": op_id, "mode": mode,
                                 "queue": mode, "status": "succeeded", "timeout_s": 60.0, "created_at": at})
                    for c in range(cases):
                        case = f"{prefix}_case_{c:02d}"
                        rows.append({"id": len(rows) + 1, "job_id": job, "operator_id": op_id, "operator": name,
                                     "case": case, "mode": mode, "structural": "ok", "precision": "pass",
                                     "verdict": rng.choice(["pass", "sim_garbage_graph_ok", "graph_fail"]),
                                     "kernel_launches": rng.choice([0, 1, 3]), "nan_count": rng.choice([None, 0, 7]),
                                     "output_written": rng.choice([None, False, True]) if mode == "sim" else True,
                                     "graph_status": rng.choice([None, "pass", "fail", "unavailable"]),
                                     "max_abs_diff": rng.uniform(0, 1e-3), "atol": 1e-3, "created_at": at})
                        latest[(case, mode)] = len(rows)
            for c in range(cases):
                case = f"{prefix}_case_{c:02d}"
                states.append({"operator_id": op_id, "case": case, "combined_verdict": "pass",
                               "sim_result_id": latest[(case, "sim")], "npu_result_id": latest.get((case, "npu"))})
    session.flush()
    for model, values in ((Submission, subs), (Job, jobs), (CaseResult, rows), (CaseState, states)):
        session.execute(sa.insert(model), values)
    for i in range(1, op_id + 1):
        results.refresh_operator(session, i)


@pytest.fixture(scope="module")
def deep_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FastAPI, str]]:
    settings = make_settings(tmp_path_factory.mktemp("overview-reads"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        _seed(session)
        secret = tokens.create(session, "reader", ["read"])[1]
        session.commit()
    yield app, secret
    app.state.engine.dispose()


def _statements(app: FastAPI, client: TestClient, url: str) -> tuple[list[str], str]:
    sent: list[str] = []

    def capture(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    sa.event.listen(app.state.engine, "before_cursor_execute", capture)
    try:
        response = client.get(url)
    finally:
        sa.event.remove(app.state.engine, "before_cursor_execute", capture)
    assert response.status_code == 200, response.text[:300]
    return sent, response.text


def test_the_overview_sends_the_same_sql_whatever_its_size_depth_and_cases(deep_app: tuple[FastAPI, str]) -> None:
    app, secret = deep_app
    with TestClient(app) as client:
        sign_in(client, secret)
        client.get("/")  # a token's use is written at most once a minute (server/services/tokens.py), here
        pages = {url: _statements(app, client, url) for url in
                 ("/?q=shallow&per_page=20", "/?q=shallow&per_page=200", "/?q=deep&per_page=200",
                  "/?q=wide&per_page=200")}
    first = pages["/?q=shallow&per_page=20"][0]
    for url, (sent, html) in pages.items():
        shown = parse(html).find_all("tbody", cls="op")
        assert len(shown) == int(re.search(r"per_page=(\d+)", url).group(1)), url  # type: ignore[union-attr]
        assert sent == first, url  # the same statements, one by one: none per row, run or case
        for statement in sent:
            assert not any(t in statement for t in CASE_TABLES), (url, statement)  # no case is read
            if re.search(r"\bFROM jobs\b", statement):
                assert "status IN" in statement, statement  # active jobs only, not the whole history
    # No case is written into the page either: a row's case table is its own page (/cases?operator=).
    assert "wide_case_" not in pages["/?q=wide&per_page=200"][1]


def test_each_row_counts_its_cases_as_the_cases_give(deep_app: tuple[FastAPI, str]) -> None:
    """results.refresh_operator (the service), CASE_COUNTS_SQL (migration 0012, bench seeding) and the
    coverage aggregate over the cases themselves agree for every operator."""
    app, _ = deep_app
    counted = ("sim_cases", "graph_cases", "npu_cases", "sim_nan_count", "sim_unwritten")
    with app.state.sessionmaker() as session:
        ops = list(session.scalars(sa.select(Operator).order_by(Operator.id)))
        by_service = {op.id: tuple(getattr(op, k) for k in counted) for op in ops}
        truth = coverage.for_operators(session, [op.id for op in ops])
        for op in ops:
            assert coverage.of_operator(op) == truth[op.id], op.name
            sims = [session.get(CaseResult, s.sim_result_id) for s in
                    session.scalars(sa.select(CaseState).where(CaseState.operator_id == op.id))]
            assert op.sim_nan_count == sum(r.nan_count or 0 for r in sims), op.name
            assert op.sim_unwritten == all(r.output_written is False for r in sims), op.name
        assert {v[-1] for v in by_service.values()} == {True, False}  # both kinds are in the seed
        session.execute(sa.update(Operator).values(sim_cases=0, graph_cases=0, npu_cases=0, sim_nan_count=0,
                                                   sim_unwritten=False))
        results.refresh_case_counts(session.connection())
        by_sql = {i: tuple(row) for i, *row in session.execute(
            sa.select(Operator.id, *(getattr(Operator, k) for k in counted)).execution_options(populate_existing=True))}
        session.rollback()
    assert by_sql == by_service
