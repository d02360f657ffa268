"""Reuse of unchanged results: hits when nothing changed, misses on one byte or another pypto."""
from __future__ import annotations

import pytest

from runtime.evidence import graph_verify
from server.services import reuse
from tests.server.suites import SuiteDriver, scale_add, sim_report, versions


@pytest.fixture
def ci(client, hdr) -> SuiteDriver:
    driver = SuiteDriver(client, hdr)
    driver.heartbeat()
    return driver


def _first_run(ci: SuiteDriver) -> tuple[dict, int]:
    files = scale_add()
    run = ci.open()
    accepted = ci.submit(run["id"], "alpha", files)
    assert accepted["not_reused"] == {"sim": "no earlier result under the same key"}
    (job,) = accepted["jobs"]
    ci.work(job["id"], sim_report(files, "alpha"))
    assert ci.close(run["id"])["status"] == "finished"
    return run, job["id"]


def test_reuse_hits_when_nothing_changed(ci: SuiteDriver):
    _, job_id = _first_run(ci)
    run = ci.open()
    accepted = ci.submit(run["id"], "alpha", scale_add())
    assert accepted["jobs"] == [] and accepted["reused"] == {"sim": [job_id]}
    closed = ci.close(run["id"])  # nothing to wait for
    assert closed["status"] == "finished" and closed["totals"]["reused"] == 2
    items = ci.get(f"/suite-runs/{run['id']}/results")["items"]
    assert {i["reused_from_job_id"] for i in items} == {job_id}
    assert all(i["provenance"].startswith(f"reused from job {job_id}") for i in items)
    assert {i["verdict"] for i in items} == {"sim_garbage_graph_ok"}
    assert ci.get(f"/suite-runs/{run['id']}/compare")["counts"]["unchanged"] == 2


def test_reuse_misses_when_one_byte_of_the_kernel_changes(ci: SuiteDriver):
    _first_run(ci)
    run = ci.open()
    accepted = ci.submit(run["id"], "alpha", scale_add("\n"))
    assert accepted["reused"] == {} and len(accepted["jobs"]) == 1
    assert accepted["not_reused"]["sim"] == "no earlier result under the same key"


def test_reuse_misses_when_the_pypto_version_changes(ci: SuiteDriver):
    _first_run(ci)
    ci.heartbeat(pypto="0.2.1")  # the worker was upgraded overnight
    run = ci.open()
    accepted = ci.submit(run["id"], "alpha", scale_add())
    assert accepted["reused"] == {} and len(accepted["jobs"]) == 1


def test_no_reuse_forces_a_run(ci: SuiteDriver):
    _first_run(ci)
    run = ci.open(reuse=False)
    accepted = ci.submit(run["id"], "alpha", scale_add())
    assert accepted["reused"] == {} and "--no-reuse" in accepted["not_reused"]["sim"]


def test_workers_that_disagree_on_versions_prevent_reuse(ci: SuiteDriver):
    _first_run(ci)
    r = ci.client.post("/api/v1/workers/heartbeat", headers=ci.hdr["worker"], json={
        "name": "other@test", "host": "t", "queues": ["sim"],
        "capabilities": {"versions": versions(torch="2.14.0")}})
    assert r.status_code == 200
    accepted = ci.submit(ci.open()["id"], "alpha", scale_add())
    assert accepted["reused"] == {} and "different versions" in accepted["not_reused"]["sim"]


def test_a_case_run_before_its_worker_had_the_calculator_is_not_reused(ci: SuiteDriver):
    files = scale_add()
    run = ci.open()
    (job,) = ci.submit(run["id"], "alpha", files)["jobs"]
    report = sim_report(files, "alpha")
    for case in report["cases"]:  # what the runtime reports while a fresh worker builds its calculator
        case["verdict"] = "sim_output_unwritten"
        case["graph_verify"] = {"status": "unavailable", "metrics": None, "rule": graph_verify.CALCULATOR_NOT_READY,
                                "reason": "the graph-verify calculator is still being built (about a minute)"}
    ci.work(job["id"], report)
    assert ci.close(run["id"])["status"] == "finished"
    accepted = ci.submit(ci.open()["id"], "alpha", files)
    assert accepted["reused"] == {} and len(accepted["jobs"]) == 1  # runs again, now with graph verify


def test_timeouts_are_never_reused():
    assert reuse.reusable_verdict("pass") and not reuse.reusable_verdict("timeout")


def test_the_key_covers_every_part():
    base = {"content_sha256": "a" * 64, "case": "c1", "mode": "sim",
            "versions": {"pypto": "0.2.0", "torch": "2.13.0", "cann": None, "runtime": "0.1.0+abc"}}
    k = reuse.key(**base)
    assert k is not None and len(k) == 64
    for change in ({"content_sha256": "b" * 64}, {"case": "c2"}, {"mode": "npu"},
                   {"versions": {**base["versions"], "pypto": "0.2.1"}},
                   {"versions": {**base["versions"], "torch": "2.14.0"}},
                   {"versions": {**base["versions"], "cann": "8.0"}},
                   {"versions": {**base["versions"], "runtime": "0.1.0+abd"}}):
        assert reuse.key(**{**base, **change}) != k, change
    assert reuse.key(**{**base, "versions": {**base["versions"], "runtime": ""}}) is None
