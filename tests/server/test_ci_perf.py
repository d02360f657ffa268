"""`crosscheck ci run` on performance regressions in SIM (server/services/perf.py): listed in the summary,
a JUnit property, never a failure by itself, and the `--fail-on perf` gate. Real processes, a live server."""
from __future__ import annotations

import json
from typing import Any

from tests.server.suites import sim_report
from tests.server.test_ci_client import C1, C2, Responder, ci, files_of, junit_cases, live, make_checkout

__all__ = ["live"]  # the live server fixture, shared


class CostResponder(Responder):
    """Answers with the recorded report, the cost model's estimate of case C1 scaled by `factor`."""

    def __init__(self, live: dict[str, Any], checkout: Any, factor: float):
        super().__init__(live, checkout)
        self.factor = factor

    def _answer(self, job: dict[str, Any]) -> None:
        if self.http.post(f"/internal/jobs/{job['id']}/claim", json={"worker": "rec@test", "attempt": 1}).status_code != 200:
            return
        folder = self.checkout / "ops" / job["operator"]
        report = sim_report(files_of(folder), job["operator"])
        for case in report["cases"]:
            if case["case"] == C1:
                cost = case["cost_model"]
                case["cost_model"] = {**cost, "aicore_time_us": cost["aicore_time_us"] * self.factor,
                                      "total_cycles": int(cost["total_cycles"] * self.factor)}
        r = self.http.post(f"/internal/jobs/{job['id']}/result", data={"attempt": "1", "report": json.dumps(report)})
        assert r.status_code == 200, r.text
        self.answered.append(job["id"])


def test_a_slower_estimate_is_listed_marked_in_junit_and_gated_only_when_asked(live, tmp_path):
    checkout = make_checkout(tmp_path / "repo", names=("delta",))
    with CostResponder(live, checkout, 1.0):
        first = ci(live, checkout, "--no-reuse", "--label", "branch=perf", "--fail-on", "perf")
    assert first.returncode == 0 and "SIM cost model" not in first.stdout, first.stdout + first.stderr
    with CostResponder(live, checkout, 1.5):
        slower = ci(live, checkout, "--no-reuse", "--label", "branch=perf", "--junit", str(tmp_path / "p.xml"))
    assert slower.returncode == 0, slower.stdout + slower.stderr  # never red by itself
    assert "Slower in the SIM cost model (1):" in slower.stdout
    assert f"delta / {C1}: cost model 1.957 → 2.935 AICore µs (+50%)" in slower.stdout
    case = junit_cases(tmp_path / "p.xml")[f"delta {C1} [sim]"]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert "+50%" in props["perf"] and not list(case.iter("failure"))
    assert "perf" not in {p.get("name") for p in junit_cases(tmp_path / "p.xml")[f"delta {C2} [sim]"].iter("property")}
    with CostResponder(live, checkout, 1.5 * 1.05):  # +5 % on the last run: under 10 %
        calm = ci(live, checkout, "--no-reuse", "--label", "branch=perf", "--fail-on", "perf")
    assert calm.returncode == 0 and "SIM cost model" not in calm.stdout, calm.stdout + calm.stderr
    with CostResponder(live, checkout, 1.5 * 1.05 * 1.2):
        gated = ci(live, checkout, "--no-reuse", "--label", "branch=perf", "--fail-on", "perf")
    assert gated.returncode == 1 and "Slower in the SIM cost model (1)" in gated.stdout, gated.stdout + gated.stderr
    assert max(len(line) for line in slower.stdout.splitlines()) <= 80
