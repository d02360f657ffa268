"""Per-case history: each case's own values over the operator's runs (service and `?case=` of the API),
on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from server.models import CaseResult
from server.services import history
from tests.server.bulk import Run, add_operator, add_runs

API = "/api/v1"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _seed(app, runs: list[Run], name: str = "nightly_add") -> tuple[int, list[int]]:
    with app.state.sessionmaker.begin() as session:
        op = add_operator(session, name)
        return op, add_runs(session, op, runs)


def _cases(app, op: int, window: history.Window) -> dict[str, list[dict]]:
    with app.state.sessionmaker() as session:
        return history.case_history(session, op, window)


def _get(client, hdr, **params):
    return client.get(f"{API}/operators/nightly_add/history", headers=hdr["read"], params=params)


def test_each_case_keeps_its_own_values_not_the_worst(app, client, hdr):
    runs = [Run(T0 + timedelta(days=d), cases={"small": ("pass", 1e-5 * (d + 1)), "bad": ("precision_fail", 0.5)},
                commit=f"c{d}") for d in range(5)]
    op, jobs = _seed(app, runs)
    by_case = _cases(app, op, history.Window())
    assert set(by_case) == {"small", "bad"}
    assert [p["max_abs_diff"] for p in by_case["small"]] == [1e-5 * (d + 1) for d in range(5)]
    assert [p["job_id"] for p in by_case["small"]] == jobs and [p["commit"] for p in by_case["small"]][-1] == "c4"
    assert all(p["max_abs_diff"] == 0.5 and p["cases"] == 1 and not p["graph_failed"] for p in by_case["bad"])
    one = _get(client, hdr, case="small")
    assert one.status_code == 200, one.text
    assert [p["max_abs_diff"] for p in one.json()["points"]] == [1e-5 * (d + 1) for d in range(5)]
    assert {p["cases"] for p in one.json()["points"]} == {1}
    worst = _get(client, hdr).json()["points"]  # without `case`: still the worst over the cases
    assert {p["max_abs_diff"] for p in worst} == {0.5} and {p["cases"] for p in worst} == {2}


def test_a_case_with_only_npu_results(app, client, hdr):
    runs = []
    for d in range(4):
        runs += [Run(T0 + timedelta(days=d), mode="sim", cases={"both": ("sim_output_unwritten", 1e35)}),
                 Run(T0 + timedelta(days=d, seconds=1), mode="npu",
                     cases={"both": ("pass", 1e-4), "npu_only": ("pass", 3e-6 * (d + 1))})]
    op, jobs = _seed(app, runs)
    by_case = _cases(app, op, history.Window())
    assert {p["mode"] for p in by_case["npu_only"]} == {"npu"}
    assert [p["job_id"] for p in by_case["npu_only"]] == jobs[1::2]
    assert [p["max_abs_diff"] for p in by_case["npu_only"]] == [3e-6 * (d + 1) for d in range(4)]
    assert [p["mode"] for p in by_case["both"]] == ["sim", "npu"] * 4
    body = _get(client, hdr, case="npu_only").json()
    assert [p["job_id"] for p in body["points"]] == jobs[1::2]
    # a known case with no run in the window: no points, not an error
    sim = _get(client, hdr, case="npu_only", mode="sim")
    assert sim.status_code == 200 and sim.json()["points"] == []
    # the limit counts the runs that stored the case
    assert [p["job_id"] for p in _get(client, hdr, case="npu_only", limit=2).json()["points"]] == jobs[5::2]


def test_an_unknown_case_is_named(app, client, hdr):
    _seed(app, [Run(T0)])
    response = _get(client, hdr, case="no_such_case")
    assert response.status_code == 404 and "no_such_case" in response.json()["detail"]
    assert _get(client, hdr, case="").status_code == 422


def test_a_date_range_is_downsampled_per_case(app, client, hdr):
    runs = [Run(T0 + timedelta(hours=6 * i), cases={"c0": ("pass", 1e-4), "c1": ("pass", 2e-4)}) for i in range(200)]
    runs[77].cases = {"c0": ("pass", 1e-4), "c1": ("precision_fail", 0.75)}  # a spike in c1 alone
    runs[150].cases = {"c0": ("pass", 0.0), "c1": ("pass", 2e-4)}  # an exact night in c0 alone
    op, jobs = _seed(app, runs)
    with app.state.sessionmaker.begin() as session:  # c1's graph verify failed once
        session.execute(update(CaseResult).where(CaseResult.job_id == jobs[60], CaseResult.case == "c1")
                        .values(graph_status="fail"))
    window = history.Window(since=T0 + timedelta(days=10), until=T0 + timedelta(days=60), buckets=20)
    by_case = _cases(app, op, window)
    for case in ("c0", "c1"):
        points = by_case[case]
        assert 2 <= len(points) <= 20 and sum(p["runs"] for p in points) == 160  # days 10..59, 4 runs a day
        assert all(T0 + timedelta(days=10) <= p["created_at"].replace(tzinfo=UTC) < T0 + timedelta(days=60)
                   for p in points)
    assert max(p["max_abs_diff"] for p in by_case["c1"]) == 0.75
    assert max(p["max_abs_diff"] for p in by_case["c0"]) == 1e-4  # c1's spike stays in c1
    assert min(p["max_abs_diff_min"] for p in by_case["c0"]) == 0.0
    assert min(p["max_abs_diff_min"] for p in by_case["c1"]) == 2e-4
    assert [p["graph_failed"] for p in by_case["c1"]].count(True) == 1
    assert not any(p["graph_failed"] for p in by_case["c0"])
    api = _get(client, hdr, case="c1", since=window.since.isoformat(), until=window.until.isoformat(), buckets=20)
    body = api.json()
    assert max(p["max_abs_diff"] for p in body["points"]) == 0.75 and body["days"] == []
