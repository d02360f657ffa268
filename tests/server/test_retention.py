"""Retention: `crosscheck db compact` keeps recent results, the latest and every verdict change of
older ones, and daily aggregates of what it deletes; on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from server import db
from server.cli import main
from server.config import get_settings
from server.models import CaseDay, CaseResult
from server.services import retention
from tests.server.bulk import Run, add_operator, add_runs

NOW = datetime.now(UTC).replace(microsecond=0)
KEEP_DAYS = 30
FAIL_DIFF = 0.75


def _night(i: int) -> datetime:
    """Night i of 100; the last 30 are inside the retention window."""
    return NOW - timedelta(days=100 - i) + timedelta(hours=1)


def _runs() -> list[Run]:
    runs = []
    for i in range(100):
        c0 = ("precision_fail", FAIL_DIFF) if 20 <= i < 25 else ("pass", 1e-4 * (1 + i % 3))
        cases = {"c0": c0, "c1": ("pass", 2e-4)}
        if i < 10:
            cases["c2"] = ("pass", 3e-4)  # a case that stopped running long ago
        runs.append(Run(_night(i), cases=cases))
        if i % 10 == 0:
            runs.append(Run(_night(i) + timedelta(minutes=30), mode="npu", cases={"c0": ("pass", 1e-4),
                                                                                   "c1": ("pass", 1e-4)}))
    return runs


@pytest.fixture
def nightly(app):
    with app.state.sessionmaker.begin() as session:
        operator_id = add_operator(session, "nightly_add")
        add_runs(session, operator_id, _runs())
    return operator_id


def _left(app, operator_id: int) -> set[tuple[str, str, int]]:
    """(case, mode, night) of the results left older than the window."""
    cutoff = NOW - timedelta(days=KEEP_DAYS)
    with app.state.sessionmaker() as session:
        rows = session.execute(select(CaseResult.case, CaseResult.mode, CaseResult.created_at)
                               .where(CaseResult.operator_id == operator_id, CaseResult.created_at < cutoff))
        return {(case, mode, 99 - (NOW - _aware(at)).days) for case, mode, at in rows}


def _aware(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at


def _count(app, operator_id: int) -> int:
    with app.state.sessionmaker() as session:
        return session.scalar(select(func.count()).where(CaseResult.operator_id == operator_id)) or 0


@pytest.mark.parametrize("batch", [7, retention.BATCH])
def test_compact_keeps_the_latest_every_flip_and_daily_aggregates(app, nightly, batch):
    done = retention.compact(app.state.sessionmaker, KEEP_DAYS, now=NOW, batch=batch)
    # Older than 30 days: nights 0-69 (SIM, 2 cases, plus c2 on nights 0-9) and NPU nights 0-60.
    assert done.examined == 70 * 2 + 10 + 7 * 2
    assert _left(app, nightly) == {
        ("c0", "sim", 0), ("c0", "sim", 20), ("c0", "sim", 25),  # first, the regression, the fix
        ("c1", "sim", 0), ("c2", "sim", 0), ("c2", "sim", 9),  # c2's latest is old: kept
        ("c0", "npu", 0), ("c1", "npu", 0)}
    assert (done.kept_latest, done.kept_flips, done.deleted) == (1, 7, 164 - 8)
    assert _count(app, nightly) == 8 + 30 * 2 + 3 * 2  # everything inside the window is untouched
    with app.state.sessionmaker() as session:
        days = {(d.mode, d.day): d for d in session.scalars(select(CaseDay).where(CaseDay.operator_id == nightly))}
    assert len(days) == 70 + 7 and sum(d.results for d in days.values()) == 164
    assert sum(d.runs for d in days.values()) == 77
    bad = days[("sim", _night(20).date())]
    assert bad.verdict_counts == {"precision_fail": 1, "pass": 1} and bad.max_abs_diff_max == FAIL_DIFF
    assert bad.max_abs_diff_min == 2e-4 and bad.runs == 1 and bad.results == 2
    assert days[("sim", _night(3).date())].verdict_counts == {"pass": 3}


def test_compact_again_changes_nothing(app, nightly):
    retention.compact(app.state.sessionmaker, KEEP_DAYS, now=NOW)
    again = retention.compact(app.state.sessionmaker, KEEP_DAYS, now=NOW, batch=3)
    assert again.deleted == 0 and again.examined == 8 and again.days == set()
    with app.state.sessionmaker() as session:
        assert session.scalar(select(func.sum(CaseDay.results))) == 164


def test_a_dry_run_counts_and_changes_nothing(app, nightly):
    before = _count(app, nightly)
    done = retention.compact(app.state.sessionmaker, KEEP_DAYS, now=NOW, dry_run=True)
    assert done.deleted == 156 and _count(app, nightly) == before
    with app.state.sessionmaker() as session:
        assert session.scalar(select(func.count()).select_from(CaseDay)) == 0


def test_history_after_compaction_shows_the_kept_runs_and_the_days(app, client, hdr, nightly):
    retention.compact(app.state.sessionmaker, KEEP_DAYS, now=NOW)
    body = client.get("/api/v1/operators/nightly_add/history", headers=hdr["read"],
                      params={"since": (NOW - timedelta(days=200)).isoformat(), "mode": "sim"}).json()
    old = [p for p in body["points"] if p["created_at"] < (NOW - timedelta(days=KEEP_DAYS)).isoformat()]
    assert [p["cases"] for p in old] == [3, 1, 1, 1]  # nights 0, 9, 20 and 25 keep some cases
    assert len(body["days"]) == 70 and body["days"][20]["verdict_counts"] == {"precision_fail": 1, "pass": 1}


@pytest.fixture
def cli(settings, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    monkeypatch.setenv("DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    db.reset_caches()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    yield run
    db.reset_caches()
    get_settings.cache_clear()


def test_the_cli_applies_the_retention_setting(app, nightly, cli, monkeypatch):
    code, out, _ = cli("db", "compact", "--dry-run", "--days", "30")
    assert code == 0 and "dry run, nothing changed" in out and "deleted 156" in out
    monkeypatch.setenv("RETENTION_DAYS", "30")
    get_settings.cache_clear()
    code, out, _ = cli("db", "compact", "--batch", "50")
    assert code == 0 and "deleted 156" in out and "77 daily aggregates" in out
    assert _count(app, nightly) == 8 + 66


@pytest.mark.parametrize("argv", [("--days", "0"), ("--days", "a month"), ("--batch", "-1")])
def test_the_cli_refuses_bad_numbers(cli, argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli("db", "compact", *argv)
    assert exit_.value.code == 2 and argv[0] in capsys.readouterr().err


def test_compaction_while_the_service_writes_and_reads(app, client, hdr, nightly):
    """Small batches in a thread while new nights are stored and history is read: nothing new is
    lost, every read succeeds, and the outcome is the same as compacting alone."""
    import threading

    errors: list[BaseException] = []

    def compact() -> None:
        try:
            retention.compact(app.state.sessionmaker, KEEP_DAYS, now=NOW, batch=5)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=compact)
    worker.start()
    new_jobs = []
    for i in range(10):  # tonight's runs arrive meanwhile
        with app.state.sessionmaker.begin() as session:
            new_jobs += add_runs(session, nightly, [Run(NOW + timedelta(minutes=i))])
        response = client.get("/api/v1/operators/nightly_add/history", headers=hdr["read"])
        assert response.status_code == 200
    worker.join(timeout=120)
    assert not worker.is_alive() and errors == []
    assert _count(app, nightly) == 8 + 66 + 10 * 2
    points = client.get("/api/v1/operators/nightly_add/history", headers=hdr["read"]).json()["points"]
    assert [p["job_id"] for p in points][-10:] == new_jobs and all(p["cases"] == 2 for p in points[-10:])
    with app.state.sessionmaker() as session:
        assert session.scalar(select(func.sum(CaseDay.results))) == 164
