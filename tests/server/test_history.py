"""Operator history: the last N runs by date, a cursor back, date ranges and min/max downsampling."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.server.bulk import Run, add_operator, add_runs

API = "/api/v1"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _seed(app, runs: list[Run], name: str = "nightly_add") -> list[int]:
    with app.state.sessionmaker.begin() as session:
        return add_runs(session, add_operator(session, name), runs)


def _get(client, hdr, name="nightly_add", **params):
    response = client.get(f"{API}/operators/{name}/history", headers=hdr["read"], params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_last_100_runs_by_date_then_a_cursor_back(app, client, hdr):
    # 130 nights, inserted newest first, so job ids run against the dates.
    jobs = _seed(app, [Run(T0 + timedelta(days=d), commit=f"c{d}") for d in reversed(range(130))])
    by_day = list(reversed(jobs))  # by_day[d] ran on day d
    page = _get(client, hdr)
    assert [p["job_id"] for p in page["points"]] == by_day[30:]  # oldest first, the newest 100
    assert page["points"][-1]["commit"] == "c129" and page["points"][-1]["runs"] == 1
    assert page["next_cursor"] == by_day[30]
    older = _get(client, hdr, cursor=page["next_cursor"])
    assert [p["job_id"] for p in older["points"]] == by_day[:30] and older["next_cursor"] is None
    small = _get(client, hdr, limit=7, cursor=by_day[10])
    assert [p["job_id"] for p in small["points"]] == by_day[3:10] and small["next_cursor"] == by_day[3]


def test_jobs_without_results_are_not_runs(app, client, hdr):
    # 40 nights with results, each followed by 3 jobs that stored nothing: more empty jobs than the
    # first chunk of jobs looked at holds.
    runs = []
    for d in range(40):
        runs += [Run(T0 + timedelta(days=d))] + [Run(T0 + timedelta(days=d, hours=h), cases={}) for h in (1, 2, 3)]
    jobs = _seed(app, runs)
    with_results = jobs[::4]
    page = _get(client, hdr, limit=25)
    assert [p["job_id"] for p in page["points"]] == with_results[15:] and page["next_cursor"] == with_results[15]
    rest = _get(client, hdr, cursor=page["next_cursor"])
    assert [p["job_id"] for p in rest["points"]] == with_results[:15] and rest["next_cursor"] is None


def test_a_date_range_and_modes(app, client, hdr):
    jobs = _seed(app, [Run(T0 + timedelta(days=d), mode="npu" if d % 2 else "sim") for d in range(300)])
    body = _get(client, hdr, since=(T0 + timedelta(days=100)).isoformat(), until=(T0 + timedelta(days=110)).isoformat())
    assert [p["job_id"] for p in body["points"]] == jobs[100:110] and body["next_cursor"] is None
    npu = _get(client, hdr, mode="npu", since=(T0 + timedelta(days=100)).isoformat(),
               until=(T0 + timedelta(days=110)).isoformat())
    assert [p["job_id"] for p in npu["points"]] == jobs[101:110:2]
    assert len(_get(client, hdr, since=T0.isoformat())["points"]) == 300  # a range is not cut at 100


def test_downsampling_keeps_the_spike_and_the_dip(app, client, hdr):
    runs = [Run(T0 + timedelta(hours=6 * i), cases={"c0": ("pass", 1e-4), "c1": ("pass", 2e-4)}) for i in range(400)]
    runs[137].cases = {"c0": ("precision_fail", 0.75), "c1": ("pass", 2e-4)}  # one bad night
    runs[251].cases = {"c0": ("pass", 0.0), "c1": ("pass", 0.0)}  # one exact night
    runs[300].aicore_time_us = 90.0
    _seed(app, runs)
    body = _get(client, hdr, since=T0.isoformat(), buckets=20)
    points = body["points"]
    assert 2 <= len(points) <= 20 and sum(p["runs"] for p in points) == 400
    assert sum(p["cases"] for p in points) == 800
    assert max(p["max_abs_diff"] for p in points) == 0.75
    assert min(p["max_abs_diff_min"] for p in points) == 0.0
    assert max(p["aicore_time_us"] for p in points) == 90.0
    assert [p["created_at"] for p in points] == sorted(p["created_at"] for p in points)
    spike = next(p for p in points if p["max_abs_diff"] == 0.75)
    assert spike["runs"] > 1 and spike["max_abs_diff_min"] == 2e-4 and spike["first_job_id"] < spike["job_id"]
    few = _get(client, hdr, limit=5, buckets=20)["points"]  # fewer runs than buckets: runs as they are
    assert [p["runs"] for p in few] == [1] * 5


@pytest.mark.parametrize(("params", "status", "detail"), [
    ({"buckets": 1}, 422, "buckets"),
    ({"limit": 0}, 422, "limit"),
    ({"mode": "gpu"}, 422, "mode"),
    ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, 422, "since must be before until"),
    ({"cursor": 999999}, 422, "cursor 999999 is not a run of this operator"),
])
def test_bad_windows_are_named(app, client, hdr, params, status, detail):
    _seed(app, [Run(T0)])
    response = client.get(f"{API}/operators/nightly_add/history", headers=hdr["read"], params=params)
    assert response.status_code == status and detail in response.text


def test_a_cursor_from_another_operator_is_refused(app, client, hdr):
    [other] = _seed(app, [Run(T0)], name="other_op")
    _seed(app, [Run(T0)])
    response = client.get(f"{API}/operators/nightly_add/history", headers=hdr["read"], params={"cursor": other})
    assert response.status_code == 422 and "not a run of this operator" in response.text
