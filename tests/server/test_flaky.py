"""Flaky detection over a synthetic flip history, and what it changes (filter, forced runs)."""
from __future__ import annotations

import pytest

from server.services.flaky import flip_counts, is_flaky
from tests.server.suites import SuiteDriver, scale_add, sim_report

K = ("op", "c1", "sim")
C1 = "scale_add_32x64"


def test_flips_count_verdict_changes_under_the_same_content():
    history = [{K: (v, "h1")} for v in ("pass", "crash", "pass", "pass", "crash")]
    assert flip_counts(history) == {K: 3}


def test_a_change_that_follows_a_kernel_change_is_not_a_flip():
    history = [{K: ("pass", "h1")}, {K: ("crash", "h2")}, {K: ("pass", "h3")}, {K: ("pass", "h3")}]
    assert flip_counts(history) == {K: 0}


def test_unknown_content_counts_and_gaps_do_not_break_the_chain():
    history = [{K: ("pass", None)}, {}, {K: ("crash", None)}, {K: ("crash", None)}, {K: ("pass", None)}]
    assert flip_counts(history) == {K: 2}
    assert is_flaky(2, 2) and not is_flaky(1, 2) and is_flaky(1, 0)


@pytest.fixture
def ci(client, hdr) -> SuiteDriver:
    driver = SuiteDriver(client, hdr)
    driver.heartbeat()
    return driver


def test_a_case_that_flips_is_flaky_filterable_and_always_runs(ci: SuiteDriver):
    files = scale_add()
    runs = [ci.run_suite({"alpha": (files, sim_report(files, "alpha", verdicts={C1: verdict}))}, reuse=False)
            for verdict in ("sim_garbage_graph_ok", "crash", "sim_garbage_graph_ok")]
    last = runs[-1]
    assert last["totals"]["flaky"] == 1
    flaky = ci.get(f"/suite-runs/{last['id']}/results", flaky="true")["items"]
    assert [(i["case"], i["flips"], i["flaky"]) for i in flaky] == [(C1, 2, True)]
    everything = ci.get(f"/suite-runs/{last['id']}/results")["items"]
    assert {i["case"]: i["flips"] for i in everything} == {C1: 2, "scale_add_64x256": 0}
    # Nothing changed, but a flaky case runs again instead of being reused.
    accepted = ci.submit(ci.open()["id"], "alpha", files)
    assert accepted["reused"] == {} and "flaky" in accepted["not_reused"]["sim"] and C1 in accepted["not_reused"]["sim"]


def test_the_window_is_set_per_suite(ci: SuiteDriver):
    files = scale_add()
    for verdict in ("sim_garbage_graph_ok", "crash", "sim_garbage_graph_ok"):
        last = ci.run_suite({"alpha": (files, sim_report(files, "alpha", verdicts={C1: verdict}))}, reuse=False)
    r = ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["admin"], json={"flaky_window": 2})
    assert r.status_code == 200 and r.json()["flaky_window"] == 2
    assert ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["submit"], json={"flaky_window": 2}).status_code == 403
    again = ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, reuse=False)
    # Over the last 2 runs (sim_garbage_graph_ok, sim_garbage_graph_ok) the case did not flip.
    assert again["totals"]["flaky"] == 0 and last["totals"]["flaky"] == 1
