"""One vocabulary and one number formatter (runtime.vocabulary, runtime.numbers); the CLI prints SIM garbage
as the pages do, and a failure is explained by a rule that explains it, never by a noise rule (issue 24)."""
from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from runtime.cli import console
from runtime import exit_codes, numbers, vocabulary
from runtime.judge import verdict_diagnoses
from runtime.report import from_dict

DATA = Path(__file__).resolve().parents[1] / "web" / "data"


def test_the_four_outcomes_have_one_word_one_colour_each() -> None:
    assert [exit_codes.WORDS[c] for c in range(4)] == ["acceptable", "kernel defect", "unusable input",
                                                        "infrastructure"]
    assert vocabulary.word(vocabulary.outcome("graph_fail", "sim")) == "kernel defect"
    assert vocabulary.word(vocabulary.outcome("sim_garbage_graph_ok", "sim")) == "acceptable"
    assert vocabulary.word(vocabulary.outcome("not_run", "sim", "golden")) == "infrastructure or harness"
    assert vocabulary.word(vocabulary.outcome("sim_unsupported", "sim")) == "cannot judge here"
    assert set(vocabulary.CSS) == set(vocabulary.RICH) == set(vocabulary.WORDS) == set(vocabulary.OUTCOMES)
    assert len(set(vocabulary.RICH.values())) == len(set(vocabulary.CSS.values())) == 4


def test_sim_garbage_is_one_rendering() -> None:
    assert numbers.sim_diff_text(4.17, garbage=True) == "10^0 · SIM garbage"
    assert numbers.sim_diff_text(1.58e35, 2192, garbage=True) == "10^35 · SIM garbage (NaN ×2,192)"
    assert numbers.sim_diff_text(4.0) == "4"
    assert numbers.is_sim_garbage(4.17, 0, False, "graph_fail")
    assert not numbers.is_sim_garbage(0.0, 0, False, "suspect_fake_pass")  # an exact match is evidence
    assert numbers.nan_inf(2192, 0) == "NaN ×2,192" and numbers.nan_inf(0, 0) == "none"
    assert numbers.nan_inf(None, None) == "—"
    assert numbers.AICORE_US == "AICore µs"


def test_the_cli_prints_sim_garbage_as_the_pages_do() -> None:
    report = from_dict(json.loads((DATA / "tiling_bug.sim.json").read_text()))  # a real run of examples/tiling_bug
    out = io.StringIO()
    console.print_report(report, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert "SIM garbage" in text and "10^" in text
    assert "noise-" not in text


def test_a_graph_fail_explained_only_by_noise_gets_the_graph_mismatch_diagnosis() -> None:
    from runtime.report import Diagnosis

    noise = Diagnosis(rule="noise-graph-verify-index", cause="benign", fix="nothing", sim_only=False)
    graph = {"status": "fail", "output_written": True, "metrics": {"max_abs_diff": 4.0, "atol": 1e-5}}
    lead = verdict_diagnoses.lead([noise], "graph_fail", "graph_verify", False, graph)
    assert lead[0].rule == "graph-verify-mismatch" and "max_abs_diff 4.0" in lead[0].evidence
    assert lead[1].rule == "noise-graph-verify-index"  # still there, never first
    explained = Diagnosis(rule="vec-tile-shape-not-set", cause="c", fix="f", sim_only=False)
    assert verdict_diagnoses.lead([explained, noise], "graph_fail", "graph_verify", False, graph)[0] is explained


def test_the_headline_names_the_explaining_rule_never_noise() -> None:
    row = {"mode": "sim", "verdict": "graph_fail", "graph_max_abs_diff": 4.0, "atol": 1e-5,
           "diagnosis_rules": "graph-verify-mismatch noise-graph-verify-index"}
    assert vocabulary.headline(row) == ("kernel defect: graph fail · graph verify max |diff| 4 / atol 1.00e-5 · "
                                        "diagnosis graph-verify-mismatch")
    assert "noise" not in vocabulary.headline(dict(row, diagnosis_rules="noise-graph-verify-index"))


def test_a_case_with_no_kernel_cannot_be_judged_and_does_not_decide_the_run() -> None:
    # a script case that ran cleanly and launched no kernel counts for nothing (runtime.exit_codes.NO_KERNEL)
    assert vocabulary.outcome("not_run", "sim", "no_kernel") == vocabulary.SKIPPED
    ran = {"verdict": "sim_output_unwritten", "stage": "sim"}
    assert vocabulary.cases_outcome([ran, {"verdict": "not_run", "stage": "no_kernel"}], "sim") == vocabulary.ACCEPTABLE
    assert vocabulary.outcome("not_run", "sim", "sim") == vocabulary.FAILED


def test_an_unwritten_output_is_identical_to_the_golden_only_when_graph_verify_measured_zero() -> None:
    """issue 35: output-not-written said "identical to the golden" beside a graph diff of 7.87e34."""
    far = {"status": "fail", "output_written": False, "metrics": {"max_abs_diff": 7.87e34}}
    cause = verdict_diagnoses.lead([], "graph_fail", "graph_verify", False, far)[0].cause
    assert "identical to the golden" not in cause and "7.87e34" in cause and "leftover memory" in cause
    same = dict(far, metrics={"max_abs_diff": 0.0})
    assert "identical to the golden" in verdict_diagnoses.lead([], "suspect_fake_pass", "graph_verify", False,
                                                                same)[0].cause


def test_a_pass_or_fail_shows_the_tolerance_applied_both_halves() -> None:
    """issue 35: "✓ 0.00781 / atol 0.005" passed through an rtol nobody saw."""
    row = {"mode": "npu", "verdict": "precision_fail", "max_abs_diff": 0.00781, "atol": 0.005, "rtol": 0.001}
    assert "NPU max |diff| 0.00781 / atol 0.005, rtol 0.001" in vocabulary.headline(row)
