"""Migration 0002 keeps suite runs that existed as a bare table: each gets a suite and a run key."""
from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from server import migrate


def test_old_suite_runs_get_a_suite_and_a_run_key(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url, "0001")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for name in ("nightly", "nightly", "weekly"):
            conn.execute(sa.text("INSERT INTO suite_runs (name, labels, created_by, created_at) "
                                 "VALUES (:n, '{}', 'ops', '2026-01-01 00:00:00')"), {"n": name})
    migrate.upgrade(url)
    with engine.connect() as conn:
        suites = dict(conn.execute(sa.text("SELECT name, id FROM suites")).all())
        runs = conn.execute(sa.text("SELECT id, name, suite_id, run_key, status FROM suite_runs ORDER BY id")).all()
    engine.dispose()
    assert set(suites) == {"nightly", "weekly"}
    assert [(r.name, r.suite_id, r.run_key, r.status) for r in runs] == [
        ("nightly", suites["nightly"], "run-1", "finished"), ("nightly", suites["nightly"], "run-2", "finished"),
        ("weekly", suites["weekly"], "run-3", "finished")]
    migrate.downgrade(url, "0001")  # and back down, with rows in place
