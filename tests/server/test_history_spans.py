"""The year view from the spans kept at write time shows the same numbers as computing it from the
raw runs (docs/history.md §6), on SQLite and PostgreSQL; the spans the migration builds in SQL are
the rows the services write."""
from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from server.models import HistorySpan
from server.services import history, history_spans
from tests.server.bulk import Run, add_operator, add_runs

START = datetime(2025, 6, 1, 7, 30, tzinfo=UTC)
SINCE, UNTIL = START + timedelta(days=3, hours=5), START + timedelta(days=360, hours=14)  # partial days at both ends
CASES = ("c0", "c1", "c2")


def _runs(rng: random.Random, n: int, start: datetime = START) -> list[Run]:
    runs = []
    for i in range(n):
        at = start + timedelta(minutes=int(i * 365 * 24 * 60 / n) + rng.randrange(0, 90))
        cases: dict[str, tuple[str, float | None]] = {}
        for c in CASES:
            if rng.random() < 0.9:  # now and then a run without this case
                diff = rng.choice([None, 0.0, rng.uniform(1e-6, 1e-3), rng.uniform(0.1, 2.0)])
                cases[c] = (rng.choice(["pass", "precision_fail"]), diff)
        runs.append(Run(at, mode="npu" if rng.random() < 0.35 else "sim", cases=cases or {"c0": ("pass", 1e-4)},
                        commit=f"c{rng.randrange(50)}", aicore_time_us=rng.choice([None, rng.uniform(1, 9)])))
    return runs


def _seed(app: Any, n: int, seed: int = 20) -> int:
    with app.state.sessionmaker.begin() as session:
        op = add_operator(session, "nightly_matmul")
        add_runs(session, op, _runs(random.Random(seed), n))
    return op


def _width(w: history.Window) -> int:
    days = history_spans.epoch_day(w.until) - history_spans.epoch_day(w.since) + 1
    return math.ceil(days / (w.buckets - 1))


def _from_raw(points: list[dict[str, Any]], w: history.Window) -> list[dict[str, Any]]:
    """What the year view must show, computed from the raw runs with history._bucket: per mode, the
    runs one by one when they are no more than the buckets, else grouped by whole days."""
    out = []
    for mode in ("sim", "npu"):
        runs = [p for p in points if p["mode"] == mode]
        if sum(p["runs"] for p in runs) <= w.buckets:
            out += runs
            continue
        groups: dict[int, list[dict[str, Any]]] = {}
        for p in runs:
            groups.setdefault(history_spans.epoch_day(p["created_at"]) // _width(w), []).append(p)
        out += [history._bucket(sorted(g, key=lambda p: (p["created_at"], p["job_id"]))) for g in groups.values()]
    return sorted(out, key=lambda p: (p["created_at"], p["job_id"]))


def _same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for g, x in zip(got, want):
        for key in ("job_id", "first_job_id", "mode", "runs", "cases", "commit", "branch", "atol", "rtol"):
            assert g[key] == x[key], key
        for key in ("created_at", "until"):
            assert g[key].replace(tzinfo=None) == x[key].replace(tzinfo=None) if x[key].tzinfo is None \
                else g[key].astimezone(UTC) == x[key].astimezone(UTC)
        for key in history.VALUES:
            for k in (key, f"{key}_min"):
                assert g[k] == pytest.approx(x[k], rel=1e-9), k
        if "graph_failed" in x:
            assert g["graph_failed"] == x["graph_failed"]


@pytest.mark.parametrize("buckets", [50, 200])
def test_the_year_in_buckets_is_the_raw_runs_grouped(app, buckets):
    op = _seed(app, 700)
    w = history.Window(since=SINCE, until=UNTIL, buckets=buckets)
    with app.state.sessionmaker() as session:
        by_run = lambda win: history.operator_history(session, op, win).points  # noqa: E731
        assert history_spans.operator_points(session, op, w, by_run) is not None  # answered from the spans
        got = history.operator_history(session, op, w)
        raw = history.operator_history(session, op, history.Window(since=SINCE, until=UNTIL)).points
    assert len(raw) > 600 and got.next_cursor is None
    want = _from_raw(raw, w)
    assert len(want) < len(raw) and max(p["runs"] for p in want) > 1  # it did group
    _same(got.points, want)


def test_one_case_and_every_case_are_the_raw_runs_grouped(app):
    op = _seed(app, 700)
    w = history.Window(since=SINCE, until=UNTIL, buckets=50)
    assert _width(w) % history_spans.SPAN_DAYS == 0  # each case's spans answer it
    with app.state.sessionmaker() as session:
        one = history.operator_history(session, op, history.Window(since=SINCE, until=UNTIL, buckets=50, case="c1"))
        raw_one = history.operator_history(session, op, history.Window(since=SINCE, until=UNTIL, case="c1")).points
        every = history.case_history(session, op, w)
        raw_every = history.case_history(session, op, history.Window(since=SINCE, until=UNTIL))
    _same(one.points, _from_raw(raw_one, w))
    assert set(every) == set(CASES)
    for case in CASES:
        # The mode's runs decide between runs and buckets, as for the main chart.
        _same(every[case], _from_raw(raw_every[case], w))


def test_an_operator_with_fewer_runs_than_buckets_shows_its_runs(app):
    op = _seed(app, 60)
    w = history.Window(since=SINCE, until=UNTIL, buckets=100)
    with app.state.sessionmaker() as session:
        got = history.operator_history(session, op, w).points
        raw = history.operator_history(session, op, history.Window(since=SINCE, until=UNTIL)).points
    assert {p["runs"] for p in got} == {1}
    _same(got, raw)


def test_later_results_update_their_span(app):
    op = _seed(app, 300)
    w = history.Window(since=SINCE, until=UNTIL, buckets=20)
    with app.state.sessionmaker.begin() as session:  # a second suite on the same nights
        add_runs(session, op, _runs(random.Random(7), 300, START + timedelta(hours=3)))
    with app.state.sessionmaker() as session:
        got = history.operator_history(session, op, w).points
        raw = history.operator_history(session, op, history.Window(since=SINCE, until=UNTIL)).points
    _same(got, _from_raw(raw, w))


def _spans(session: Any) -> list[tuple[Any, ...]]:
    out = []
    for s in session.scalars(select(HistorySpan).order_by(HistorySpan.operator_id, HistorySpan.case, HistorySpan.mode,
                                                         HistorySpan.days, HistorySpan.span)):
        row = {c.name: getattr(s, c.key) for c in HistorySpan.__table__.columns}
        for key in ("created_at", "until"):
            row[key] = row[key].replace(tzinfo=None) if row[key].tzinfo is None else row[key].astimezone(UTC)
        out.append(row)
    return out


def test_the_migrations_rebuild_in_sql_writes_the_rows_the_services_write(app):
    _seed(app, 500)
    with app.state.sessionmaker() as session:
        written = _spans(session)
    with app.state.engine.begin() as conn:
        assert history_spans.rebuild(conn) == len(written)
    with app.state.sessionmaker() as session:
        rebuilt = _spans(session)
    assert len(written) > 100
    for a, b in zip(rebuilt, written):
        assert {k: v for k, v in a.items() if not isinstance(v, float)} == \
            {k: v for k, v in b.items() if not isinstance(v, float)}
        assert {k: v for k, v in a.items() if isinstance(v, float)} == \
            pytest.approx({k: v for k, v in b.items() if isinstance(v, float)}, rel=1e-9)
