"""A fake pass and an unwritten output get their own diagnoses, ahead of graph-verify-mismatch,
at the stage that failed."""
from __future__ import annotations

from runtime.report import Diagnosis
from runtime.judge.verdict_diagnoses import failed_stage, lead

MISMATCH = Diagnosis(rule="graph-verify-mismatch", cause="maths wrong", fix="check maths", sim_only=False)
TILES = Diagnosis(rule="vec-tile-shape-not-set", cause="tiles", fix="set them", sim_only=False)
UNWRITTEN = {"status": "fail", "output_written": False, "reason": "the tensor graph never wrote the output"}


def test_golden_fallback_and_unwritten_output_win_over_the_mismatch_rule() -> None:
    out = lead([MISMATCH, TILES], "suspect_fake_pass", "graph_verify", True, UNWRITTEN)
    assert [d.rule for d in out] == ["golden-fallback", "output-not-written", "vec-tile-shape-not-set"]
    assert {d.stage for d in out[:2]} == {"graph_verify"}
    out = lead([MISMATCH], "graph_fail", "graph_verify", False, UNWRITTEN)
    assert [d.rule for d in out] == ["output-not-written"]


def test_a_real_maths_error_keeps_the_mismatch_rule() -> None:
    wrong = {"status": "fail", "output_written": True}
    assert lead([MISMATCH], "graph_fail", "graph_verify", False, wrong) == [MISMATCH]


def test_the_stage_is_the_one_that_failed() -> None:
    assert failed_stage("sim", "sim", "sim", None, "structural_error") == "sim"
    assert failed_stage(None, "compare", "sim", UNWRITTEN, "suspect_fake_pass") == "graph_verify"
    assert failed_stage(None, "compare", "npu", None, "precision_fail") == "compare"
    assert failed_stage(None, "compare", "sim", {"status": "pass"}, "sim_garbage_graph_ok") == "compare"
