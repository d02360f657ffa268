"""`crosscheck ci run` on precision drift (server/services/drift.py): counted in the summary, a JUnit
property, never a failure by itself, and the `--fail-on drift` gate. Real processes, a live server."""
from __future__ import annotations

import json
from typing import Any

from tests.server.suites import sim_report
from tests.server.test_ci_client import C1, C2, Responder, ci, files_of, junit_cases, live, make_checkout

__all__ = ["live"]  # the live server fixture, shared


class DiffResponder(Responder):
    """Answers with the recorded report, graph verify's max |diff| of case C1 set to `diff`."""

    def __init__(self, live: dict[str, Any], checkout: Any, diff: float):
        super().__init__(live, checkout)
        self.diff = diff

    def _answer(self, job: dict[str, Any]) -> None:
        if self.http.post(f"/internal/jobs/{job['id']}/claim", json={"worker": "rec@test", "attempt": 1}).status_code != 200:
            return
        folder = self.checkout / "ops" / job["operator"]
        report = sim_report(files_of(folder), job["operator"], graph_diffs={C1: self.diff, C2: 1e-6})
        r = self.http.post(f"/internal/jobs/{job['id']}/result", data={"attempt": "1", "report": json.dumps(report)})
        assert r.status_code == 200, r.text
        self.answered.append(job["id"])


def test_drift_is_counted_marked_in_junit_and_gated_only_when_asked(live, tmp_path):
    checkout = make_checkout(tmp_path / "repo", names=("gamma",))
    for diff in (1e-6, 2e-6, 1e-6, 4e-6):
        with DiffResponder(live, checkout, diff):
            quiet = ci(live, checkout, "--no-reuse", "--label", "branch=drift")
        assert quiet.returncode == 0 and "Precision drift" not in quiet.stdout, quiet.stdout + quiet.stderr
    with DiffResponder(live, checkout, 1.6e-5):
        drifting = ci(live, checkout, "--no-reuse", "--label", "branch=drift", "--junit", str(tmp_path / "d.xml"))
    assert drifting.returncode == 0, drifting.stdout + drifting.stderr  # never red by itself
    assert "Precision drift (1), still within tolerance:" in drifting.stdout
    assert f"gamma / {C1} (SIM): max |diff| 1.6e-05 is 11x its median" in drifting.stdout
    case = junit_cases(tmp_path / "d.xml")[f"gamma {C1} [sim]"]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert "11x its median" in props["drift"] and not list(case.iter("failure"))
    assert "drift" not in {p.get("name") for p in junit_cases(tmp_path / "d.xml")[f"gamma {C2} [sim]"].iter("property")}
    with DiffResponder(live, checkout, 1.9e-5):  # 9.5x the median 2e-6 of (1, 2, 1, 4, 16)e-6: not drift
        calm = ci(live, checkout, "--no-reuse", "--label", "branch=drift", "--fail-on", "drift")
    assert calm.returncode == 0 and "Precision drift" not in calm.stdout, calm.stdout + calm.stderr
    with DiffResponder(live, checkout, 4e-5):  # 13x the median 3e-6 of (1, 2, 1, 4, 16, 19)e-6
        gated = ci(live, checkout, "--no-reuse", "--label", "branch=drift", "--fail-on", "drift")
    assert gated.returncode == 1 and "Precision drift (1)" in gated.stdout, gated.stdout + gated.stderr
    assert max(len(line) for line in drifting.stdout.splitlines()) <= 80
