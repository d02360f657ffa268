"""`crosscheck ci run --bisect` (client/ci_bisect.py): a regressed operator is bisected on this host between
the previous run's commit label and this run's, with real git and real pypto; the culprit is named in the
summary and on the regressed JUnit testcase, and attached to the suite run on the server. Real processes,
a live server."""
from __future__ import annotations

import httpx2 as httpx
import pytest

from tests.runtime.bisect_history import WRONG, git
from tests.server.test_ci_client import C1, C2, Responder, ci, junit_cases, live, make_checkout

__all__ = ["live"]  # the live server fixture, shared

pytestmark = pytest.mark.slow  # two real pypto runs of the operator

RIGHT = "out[:] = x * SCALE + y"


def test_the_regressed_operator_is_bisected_to_its_commit(live, tmp_path, calculator_cache):
    checkout = make_checkout(tmp_path / "repo", names=("epsilon",))
    git(checkout, "init", "-q", "-b", "main")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "add epsilon")
    good = git(checkout, "rev-parse", "HEAD")
    impl = checkout / "ops" / "epsilon" / "scale_add_impl.py"
    impl.write_text(impl.read_text().replace(RIGHT, WRONG))
    git(checkout, "commit", "-q", "-am", "epsilon: a faster scale")
    bad = git(checkout, "rev-parse", "HEAD")
    with Responder(live, checkout):
        first = ci(live, checkout, "--no-reuse", "--label", "branch=bisect", "--label", f"commit={good}", "--bisect")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "culprit" not in first.stdout and "bisect of" not in first.stdout  # nothing regressed
    with Responder(live, checkout, planted={"epsilon": {C1: "structural_error"}}):
        second = ci(live, checkout, "--no-reuse", "--label", "branch=bisect", "--label", f"commit={bad}",
                    "--bisect", "--bisect-budget", "15", "--junit", str(tmp_path / "b.xml"), timeout_s=900)
    assert second.returncode == 1, second.stdout + second.stderr  # the regression gate, as without --bisect
    assert f"culprit of epsilon: {bad} epsilon: a faster scale" in " ".join(second.stdout.split()), second.stdout
    assert max(len(line) for line in second.stdout.splitlines()) <= 80
    cases = junit_cases(tmp_path / "b.xml")
    props = {p.get("name"): p.get("value") for p in cases[f"epsilon {C1} [sim]"].iter("property")}
    assert props["culprit"] == f"{bad} epsilon: a faster scale"
    assert "culprit" not in {p.get("name") for p in cases[f"epsilon {C2} [sim]"].iter("property")}
    assert "culprits attached to suite run" in second.stdout, second.stdout
    read = {"Authorization": f"Bearer {live['tokens']['read']}"}
    (run,) = httpx.get(live["url"] + "/api/v1/suite-runs", params={"commit": bad}, headers=read).json()["items"]
    assert [(c["operator"], c["commit"], c["subject"], c["metric"]) for c in run["culprits"]] == \
        [("epsilon", bad, "epsilon: a faster scale", "verdict")]


def test_without_commit_labels_the_bisect_says_why(live, tmp_path):
    checkout = make_checkout(tmp_path / "plain", names=("zeta",))
    with Responder(live, checkout):
        ci(live, checkout, "--no-reuse", "--label", "branch=nolabel")
    with Responder(live, checkout, planted={"zeta": {C1: "structural_error"}}):
        proc = ci(live, checkout, "--no-reuse", "--label", "branch=nolabel", "--bisect")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "bisect not run: this run or the previous one has no commit label" in proc.stdout
