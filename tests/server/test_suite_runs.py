"""Suite runs over the API: regressions, fixes, new and vanished cases; the run's lifecycle."""
from __future__ import annotations

import pytest

from tests.server.suites import SuiteDriver, scale_add, sim_report, zip_files

C1, C2 = "scale_add_32x64", "scale_add_64x256"


@pytest.fixture
def ci(client, hdr) -> SuiteDriver:
    driver = SuiteDriver(client, hdr)
    driver.heartbeat()
    return driver


def test_a_planted_regression_and_a_planted_fix_are_detected(ci: SuiteDriver):
    files = scale_add()
    first = ci.run_suite({
        "alpha": (files, sim_report(files, "alpha", verdicts={C2: "structural_error"})),
        "beta": (files, sim_report(files, "beta", graph_diffs={C1: 1e-6})),
        "gone": (files, sim_report(files, "gone")),
    }, reuse=False)
    second = ci.run_suite({
        "alpha": (files, sim_report(files, "alpha", verdicts={C1: "structural_error"})),  # C1 breaks, C2 fixed
        "beta": (files, sim_report(files, "beta", graph_diffs={C1: 1e-4})),  # graph diff grew 100x
        "fresh": (files, sim_report(files, "fresh")),
    }, reuse=False)
    assert second["previous_run_id"] == first["id"]
    cmp = ci.get(f"/suite-runs/{second['id']}/compare")
    assert cmp["other_id"] == first["id"]
    regressions = {(c["operator"], c["case"]): c for c in cmp["regressions"]}
    assert set(regressions) == {("alpha", C1), ("beta", C1)}
    assert regressions[("alpha", C1)]["before"] == "sim_garbage_graph_ok"
    assert regressions[("alpha", C1)]["after"] == "structural_error"
    assert "grew 100x" in regressions[("beta", C1)]["why"]
    assert [(c["operator"], c["case"], c["before"], c["after"]) for c in cmp["fixes"]] == [
        ("alpha", C2, "structural_error", "sim_garbage_graph_ok")]
    assert {(c["operator"], c["case"]) for c in cmp["new"]} == {("fresh", C1), ("fresh", C2)}
    assert {(c["operator"], c["case"]) for c in cmp["vanished"]} == {("gone", C1), ("gone", C2)}
    assert cmp["counts"]["unchanged"] == 1  # beta C2
    # The run keeps the counts; the explicit pair gives the same answer.
    assert second["compare"]["counts"]["regressions"] == 2
    assert ci.get(f"/suite-runs/{second['id']}/compare/{first['id']}")["counts"] == cmp["counts"]
    # Reversed, the fix is a regression and the regressions are fixes (the growth is not a fix).
    back = ci.get(f"/suite-runs/{first['id']}/compare/{second['id']}")
    assert {(c["operator"], c["case"]) for c in back["regressions"]} == {("alpha", C2)}
    assert {(c["operator"], c["case"]) for c in back["fixes"]} == {("alpha", C1)}


def test_another_branch_is_not_the_previous_run(ci: SuiteDriver):
    files = scale_add()
    main = ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, branch="main", reuse=False)
    feature = ci.run_suite({"alpha": (files, sim_report(files, "alpha", verdicts={C1: "crash"}))},
                           branch="feature", reuse=False)
    assert feature["previous_run_id"] is None and feature["compare"] == {}
    assert ci.get(f"/suite-runs/{feature['id']}/compare")["counts"]["regressions"] == 0
    again = ci.run_suite({"alpha": (files, sim_report(files, "alpha", verdicts={C1: "crash"}))},
                         branch="main", reuse=False)
    assert again["previous_run_id"] == main["id"] and again["compare"]["counts"]["regressions"] == 1


def test_a_run_finishes_only_when_closed_and_complete(ci: SuiteDriver):
    files = scale_add()
    run = ci.open(reuse=False)
    accepted = ci.submit(run["id"], "alpha", files)
    (job,) = accepted["jobs"]
    assert ci.get(f"/suite-runs/{run['id']}")["progress"] == {"queued": 2}
    ci.work(job["id"], sim_report(files, "alpha"))
    assert ci.get(f"/suite-runs/{run['id']}")["status"] == "open"  # not closed: more may come
    closed = ci.close(run["id"])
    assert closed["status"] == "finished" and closed["totals"]["cases"] == 2
    assert closed["totals"]["by_mode"] == {"sim": {"sim_garbage_graph_ok": 2}}
    assert closed["url"].endswith(f"/suite-runs/{run['id']}")
    late = ci.client.post(f"/api/v1/suite-runs/{run['id']}/submissions", headers=ci.hdr["submit"],
                          data={"operator": "beta"}, files={"file": ("beta.zip", b"PK")})
    assert late.status_code == 409 and "closed" in late.json()["detail"]


def test_a_job_that_ends_without_a_report_counts_as_not_run(ci: SuiteDriver):
    files = scale_add()
    run = ci.open(reuse=False)
    (job,) = ci.submit(run["id"], "alpha", files)["jobs"]
    ci.close(run["id"])
    ci.work(job["id"], None, error="the bundle could not be unpacked")
    done = ci.get(f"/suite-runs/{run['id']}")
    assert done["status"] == "finished" and done["totals"]["by_mode"] == {"sim": {"not_run": 2}}
    items = ci.get(f"/suite-runs/{run['id']}/results")["items"]
    assert all("job" in i["note"] and "could not be unpacked" in i["note"] for i in items)


def test_opening_a_run_is_idempotent_and_checks_its_input(ci: SuiteDriver):
    first = ci.open(key="pipeline-41")
    again = ci.client.post("/api/v1/suite-runs", headers=ci.hdr["submit"],
                           json={"suite": "nightly", "run_key": "pipeline-41"})
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    for body, needle in (({"suite": "", "run_key": "k"}, "suite name"),
                         ({"suite": "n", "run_key": "a b"}, "run key"),
                         ({"suite": "n", "run_key": "k", "modes": ["gpu"]}, "modes"),
                         ({"suite": "n", "run_key": "k", "labels": {"bad key": "x"}}, "label name")):
        r = ci.client.post("/api/v1/suite-runs", headers=ci.hdr["submit"], json=body)
        assert r.status_code == 422 and needle in r.json()["detail"], (body, r.text)
    r = ci.client.post("/api/v1/suite-runs", headers=ci.hdr["read"], json={"suite": "n", "run_key": "k"})
    assert r.status_code == 403
    assert ci.client.get("/api/v1/suite-runs/999", headers=ci.hdr["read"]).status_code == 404


def test_resubmitting_an_operator_is_a_replay_and_other_files_conflict(ci: SuiteDriver):
    files = scale_add()
    run = ci.open(reuse=False)
    first = ci.submit(run["id"], "alpha", files)
    again = ci.submit(run["id"], "alpha", files)
    assert again["replay"] and [j["id"] for j in again["jobs"]] == [j["id"] for j in first["jobs"]]
    r = ci.client.post(f"/api/v1/suite-runs/{run['id']}/submissions", headers=ci.hdr["submit"],
                       data={"operator": "alpha"}, files={"file": ("alpha.zip", zip_files(scale_add("#")))})
    assert r.status_code == 409 and "different files" in r.json()["detail"]
