"""The JUnit writer and the regression list head a failing case by its deciding evidence and an explaining
diagnosis, never by a noise rule (issue 24; runtime.vocabulary.headline)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from client import junit_out
from server.services import suite_compare

ROW = {"operator": "scale_shift", "case": "level0", "mode": "sim", "verdict": "graph_fail", "duration_s": 1.0,
       "max_abs_diff": 4.17, "graph_max_abs_diff": 4.0, "atol": 1e-5, "diagnosis_rules": "noise-graph-verify-index"}


def test_junit_heads_a_failure_by_its_evidence_not_by_noise() -> None:
    tree = junit_out.build("nightly", "http://x/suite-runs/2", [ROW])
    failure = next(tree.getroot().iter("failure"))
    assert failure.get("type") == "graph_fail"
    message = failure.get("message") or ""
    assert message.startswith("SIM: kernel defect: graph fail · graph verify max |diff| 4 / atol 1.00e-5")
    assert "noise-" not in message and "noise-" not in (failure.text or "")
    ET.fromstring(ET.tostring(tree.getroot()))  # still well-formed


def test_a_regression_says_what_stands_behind_it() -> None:
    before = {("scale_shift", "level0", "sim"): suite_compare.CaseOutcome("sim_garbage_graph_ok", graph_max_abs_diff=0.0)}
    after = {("scale_shift", "level0", "sim"): suite_compare.CaseOutcome(
        "graph_fail", graph_max_abs_diff=4.0, diagnosis_rules="noise-graph-verify-index")}
    (change,) = suite_compare.compare(before, after).regressions
    assert change.why == "SIM garbage · graph ok → graph fail; graph verify max |diff| 4"
