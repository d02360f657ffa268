"""Performance regressions in SIM over real stored suite history (SQLite and PostgreSQL):
server/services/perf.py, docs/ci.md "Performance regressions"."""
from __future__ import annotations

from typing import Any

import pytest

from tests.server.suites import SuiteDriver, scale_add, sim_report

C1, C2 = "scale_add_32x64", "scale_add_64x256"
US = {C1: 1.9567, C2: 4.1128}  # the fixture's real cost-model estimates


@pytest.fixture
def ci(client, hdr) -> SuiteDriver:
    driver = SuiteDriver(client, hdr)
    driver.heartbeat()
    return driver


def nightly(ci: SuiteDriver, factor: float = 1.0, pypto: str | None = None) -> dict[str, Any]:
    files = scale_add()
    report = sim_report(files, "alpha", env={"pypto": pypto} if pypto else None)
    for case in report["cases"]:
        if case["case"] == C1:
            case["cost_model"] = {**case["cost_model"], "aicore_time_us": US[C1] * factor,
                                  "total_cycles": int(9384 * factor)}
    return ci.run_suite({"alpha": (files, report)}, reuse=False, branch="main")


def test_an_estimate_ten_percent_up_is_a_perf_regression_and_stays_green(ci: SuiteDriver):
    first = nightly(ci)
    assert first["totals"]["perf"] == 0  # nothing to compare with
    assert nightly(ci, 1.09)["totals"]["perf"] == 0  # +9 %: under the default 10 %
    run = nightly(ci, 1.09 * 1.25)
    assert run["totals"]["perf"] == 1
    [p] = run["totals"]["perf_regressions"]
    assert (p["operator"], p["case"], p["mode"]) == ("alpha", C1, "sim")
    assert p["previous_us"] == pytest.approx(US[C1] * 1.09) and p["rise"] == pytest.approx(0.25)
    assert p["cycles"] == int(9384 * 1.09 * 1.25) and "+25%" in p["why"]
    assert run["totals"]["failing"] == 0 and run["compare"]["counts"]["regressions"] == 0
    # the same estimate again is not a rise; a faster kernel is not either
    assert nightly(ci, 1.09 * 1.25)["totals"]["perf"] == 0
    assert nightly(ci, 0.5)["totals"]["perf"] == 0


def test_a_pypto_upgrade_is_not_a_kernel_slowdown(ci: SuiteDriver):
    nightly(ci)
    run = nightly(ci, 2.0, pypto="0.2.1")
    assert run["totals"]["perf"] == 0 and run["totals"]["perf_pypto_changed"] == 2
    # from there on the new pypto is the baseline
    assert nightly(ci, 2.5, pypto="0.2.1")["totals"]["perf"] == 1


def test_the_threshold_is_set_per_suite(ci: SuiteDriver):
    nightly(ci)
    r = ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["admin"], json={"perf_threshold": 50})
    assert r.status_code == 200 and r.json()["perf_threshold"] == 50
    assert ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["admin"],
                           json={"perf_threshold": 0}).status_code == 422
    assert nightly(ci, 1.4)["totals"]["perf"] == 0
    assert nightly(ci, 1.4 * 1.5)["totals"]["perf"] == 1


def test_the_suite_run_page_lists_the_slow_case(ci: SuiteDriver):
    nightly(ci)
    run = nightly(ci, 1.5)
    page = ci.client.get(f"/suite-runs/{run['id']}", headers=ci.hdr["read"])
    assert page.status_code == 200
    assert 'id="perf"' in page.text and "+50%" in page.text and C1 in page.text
