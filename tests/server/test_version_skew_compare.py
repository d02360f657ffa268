"""Nightly comparison: a case that turns out to be written for another pypto is no regression, from a
structural error or from a kernel that ran before (cannot judge here: the gate counts kernel defects only);
a kernel that fails again on its own pypto is one."""
from __future__ import annotations

from server.services.suite_compare import CaseOutcome, compare

KEY = ("op", "case_1", "sim")


def outcome(verdict: str) -> dict[tuple[str, str, str], CaseOutcome]:
    return {KEY: CaseOutcome(verdict)}


def test_structural_error_to_version_skew_is_no_regression() -> None:
    out = compare(outcome("structural_error"), outcome("version_skew"))
    assert out.regressions == [] and out.fixes == []
    assert [(c.before, c.after) for c in out.changed] == [("structural_error", "version_skew")]


def test_a_running_kernel_that_meets_another_pypto_is_changed_not_a_regression() -> None:
    """The gate counts kernel defects only (docs/ci.md): another pypto cannot judge the kernel here."""
    out = compare(outcome("sim_output_unwritten"), outcome("version_skew"))
    assert out.regressions == []
    [change] = out.changed
    assert (change.before, change.after) == ("sim_output_unwritten", "version_skew")
    assert "cannot judge here: not a kernel defect, the gate does not count it" in change.why


def test_version_skew_to_structural_error_regresses() -> None:
    out = compare(outcome("version_skew"), outcome("structural_error"))
    assert [(c.before, c.after) for c in out.regressions] == [("version_skew", "structural_error")]
