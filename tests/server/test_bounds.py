"""Bounded work per submission and per token (issue 25): on main a 100,000-case package was accepted and its
job got a time limit of about a year. Each cap is refused up front with a 4xx naming its setting, and nothing
is stored."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from server.models import Job, Submission
from server.services import tokens
from tests.server.conftest import package_files

URL = "/api/v1/submissions"


def _package(cases: int) -> dict[str, str]:
    files = package_files("scale_add")
    spec = json.loads(files["test_cases.json"])
    one = spec["test_cases"][0]
    spec["test_cases"] = [{**one, "id": f"c{i}"} for i in range(cases)]
    files["test_cases.json"] = json.dumps(spec, separators=(",", ":"))
    return files


def _stored(app) -> tuple[int, int]:
    with app.state.sessionmaker() as session:
        return session.query(Submission).count(), session.query(Job).count()


@pytest.fixture
def bounded(make_app, settings):
    app = make_app(settings.model_copy(update={"max_cases_per_submission": 100, "max_job_s": 3600.0,
                                               "case_timeout_s": 60.0, "max_queued_cases_per_token": 5}))
    with TestClient(app) as client:
        with app.state.sessionmaker.begin() as session:
            secrets = [tokens.create(session, f"tenant-{who}", ["submit"])[1] for who in "ab"]
        yield client, [{"Authorization": f"Bearer {s}"} for s in secrets]


def test_too_many_cases_are_refused_naming_the_cap(bounded):
    client, (a, _) = bounded
    r = client.post(URL, headers=a, json={"files": _package(101), "modes": ["sim"]})
    assert r.status_code == 413, r.text
    assert "101 cases" in r.json()["detail"] and "MAX_CASES_PER_SUBMISSION" in r.json()["detail"]
    assert _stored(client.app) == (0, 0)


def test_a_job_time_limit_past_the_cap_is_refused_naming_it(bounded):
    client, (a, _) = bounded
    body = {"files": _package(60), "modes": ["sim"], "cases": [f"c{i}" for i in range(59)]}
    r = client.post(URL, headers=a, json=body)
    assert r.status_code == 413, r.text  # 59 cases x 60 s + 120 s = 3660 s > 3600 s
    assert "3660 s" in r.json()["detail"] and "MAX_JOB_S" in r.json()["detail"]
    ok = client.post(URL, headers=a, json={"files": _package(2), "modes": ["sim"]})
    assert ok.status_code == 202, ok.text
    job = client.get(f"/api/v1/jobs/{ok.json()['jobs'][0]['id']}", headers=a).json()
    assert job["timeout_s"] == 2 * 60.0 + 120.0


def test_a_tokens_queued_cases_are_bounded(bounded):
    client, (a, b) = bounded
    first = client.post(URL, headers=a, json={"files": _package(2), "modes": ["sim", "npu"]})
    assert first.status_code == 202, first.text  # 4 cases queued
    r = client.post(URL, headers=a, json={"files": _package(1), "modes": ["sim", "npu"]})
    assert r.status_code == 429, r.text
    assert "MAX_QUEUED_CASES_PER_TOKEN" in r.json()["detail"] and "4 case(s)" in r.json()["detail"]
    assert client.post(URL, headers=b, json={"files": _package(2), "modes": ["sim"]}).status_code == 202
    for job in first.json()["jobs"]:  # its own cancels free its quota
        assert client.post(f"/api/v1/jobs/{job['id']}/cancel", headers=a).status_code == 200
    assert client.post(URL, headers=a, json={"files": _package(1), "modes": ["sim", "npu"]}).status_code == 202
