"""The verdict rules, one row per situation."""
import pytest

from runtime import verdicts as v
from runtime.verdicts import Evidence, decide

GARBAGE = {"shape_match": True, "max_abs_diff": 1e31, "mismatch_count": 900, "nan_count": 3}
CLOSE = {"shape_match": True, "max_abs_diff": 1e-7, "mismatch_count": 0, "nan_count": 0}
WRONG_SHAPE = {"shape_match": False, "mismatch_count": 10, "nan_count": 0}


def ev(**kw):
    base = dict(mode="sim", structural="ok", kernel_launches=1, metrics=GARBAGE, within_tolerance=False,
                output_written=False)
    base.update(kw)
    return Evidence(**base)


CASES = [
    ("timeout", ev(structural="timeout"), v.TIMEOUT),
    ("crash", ev(structural="crash"), v.CRASH),
    ("oom is a crash", ev(structural="oom"), v.CRASH),
    ("golden failed", ev(golden_failed=True, structural="not_run", kernel_launches=0), v.NOT_RUN),
    ("compile error", ev(structural="error"), v.STRUCTURAL_ERROR),
    ("no launch, no match", ev(kernel_launches=0), v.NOT_RUN),
    ("no launch but matches", ev(kernel_launches=0, metrics=CLOSE, within_tolerance=True), v.SUSPECT_FAKE_PASS),
    ("lint fallback and match", ev(metrics=CLOSE, within_tolerance=True, output_written=True, golden_fallback=True,
                                   mode="npu"), v.SUSPECT_FAKE_PASS),
    ("match but kernel never wrote it", ev(metrics=CLOSE, within_tolerance=True, output_written=False, mode="npu"),
     v.SUSPECT_FAKE_PASS),
    ("sim match without write", ev(metrics=CLOSE, within_tolerance=True), v.SUSPECT_FAKE_PASS),
    ("sim garbage", ev(), v.SIM_OUTPUT_UNWRITTEN),
    ("sim garbage, graph ok", ev(graph_status="pass"), v.SIM_GARBAGE_GRAPH_OK),
    ("sim garbage, graph fail", ev(graph_status="fail"), v.GRAPH_FAIL),
    ("sim garbage, graph error", ev(graph_status="error"), v.SIM_OUTPUT_UNWRITTEN),
    ("sim wrong shape", ev(metrics=WRONG_SHAPE), v.STRUCTURAL_ERROR),
    ("npu pass", ev(mode="npu", metrics=CLOSE, within_tolerance=True, output_written=True), v.PASS),
    ("npu fail", ev(mode="npu", output_written=True), v.PRECISION_FAIL),
    ("npu wrong shape", ev(mode="npu", metrics=WRONG_SHAPE, output_written=True), v.PRECISION_FAIL),
    ("script exit 0 no launch", ev(is_script=True, exit_code=0, kernel_launches=0, metrics=None), v.NOT_RUN),
    ("script sim ran", ev(is_script=True, exit_code=0, metrics=None), v.SIM_OUTPUT_UNWRITTEN),
    ("script exception", ev(is_script=True, exit_code=1, structural="error", metrics=None), v.STRUCTURAL_ERROR),
    ("script early exit", ev(is_script=True, exit_code=3, kernel_launches=0, metrics=None), v.NOT_RUN),
    ("script sim assert passes on unwritten", ev(is_script=True, exit_code=0, asserts_passed=1, metrics=CLOSE),
     v.SUSPECT_FAKE_PASS),
    ("script npu pass", ev(is_script=True, mode="npu", exit_code=0, asserts_passed=2, output_written=True), v.PASS),
    ("script npu assert fails", ev(is_script=True, mode="npu", exit_code=1, asserts_failed=1, output_written=True),
     v.PRECISION_FAIL),
    ("script npu marker fail", ev(is_script=True, mode="npu", exit_code=0, markers={"precision_fail": 1},
                                  output_written=True), v.PRECISION_FAIL),
    ("script npu no evidence", ev(is_script=True, mode="npu", exit_code=0, output_written=True), v.NOT_RUN),
    # SIM is never `pass`: it has no data path on a CPU host
    ("sim written and matching", ev(metrics=CLOSE, within_tolerance=True, output_written=True), v.SUSPECT_FAKE_PASS),
    ("sim written garbage", ev(output_written=True), v.SIM_OUTPUT_UNWRITTEN),
    ("script sim precision passed", ev(is_script=True, exit_code=0, asserts_passed=1, metrics=CLOSE,
                                       output_written=True), v.SUSPECT_FAKE_PASS),
    # the harness's own checks
    ("contradiction", ev(contradictions=["the job sent its 'result' event 2 times"]), v.SUSPECT_FAKE_PASS),
    ("contradiction beats npu pass", ev(mode="npu", metrics=CLOSE, within_tolerance=True, output_written=True,
                                        contradictions=["edited"]), v.SUSPECT_FAKE_PASS),
    ("contradiction in a script", ev(is_script=True, exit_code=0, contradictions=["edited"]), v.SUSPECT_FAKE_PASS),
    ("launch events pypto never saw", ev(kernel_launches=0, launches_reported=2), v.NOT_RUN),
    ("changed after the launch", ev(mode="npu", metrics=CLOSE, within_tolerance=True, output_written=False,
                                    changed_after_launch=True), v.SUSPECT_FAKE_PASS),
]


@pytest.mark.parametrize("name,evidence,expected", CASES, ids=[c[0] for c in CASES])
def test_decide(name, evidence, expected):
    verdict, precision, reason = decide(evidence)
    assert verdict == expected, reason
    assert verdict in v.VERDICTS and reason
    if verdict == v.PASS and evidence.mode == "npu":
        assert precision == "pass"
    if evidence.mode == "sim":
        assert verdict != v.PASS and precision != "pass"  # SIM and graph verify never claim precision
    if evidence.contradictions:
        assert evidence.contradictions[0] in reason
    if name == "launch events pypto never saw":
        assert "reported 2 launch(es)" in reason


def test_acceptable_per_mode():
    assert v.acceptable(v.SIM_OUTPUT_UNWRITTEN, "sim") and v.acceptable(v.SIM_GARBAGE_GRAPH_OK, "sim")
    assert not v.acceptable(v.PASS, "sim")
    assert not v.acceptable(v.SIM_OUTPUT_UNWRITTEN, "npu") and not v.acceptable(v.GRAPH_FAIL, "sim")
    assert v.acceptable(v.PASS, "npu")


def test_every_verdict_is_documented():
    for name in v.VERDICTS:
        assert f"| {name}" in v.__doc__


def test_the_mode_type_is_the_mode_set():
    from typing import get_args

    from runtime import modes

    assert get_args(modes.Mode) == modes.MODES


# A compare that cannot tell a correct kernel from garbage (runtime.judge.degenerate): inconclusive, unless a
# cheat is shown some other way (docs/realops.md §11).
ZEROS = "the golden is all zero, so a zero-filled output nobody wrote matches it"
DEGENERATE = [
    ("sim match, degenerate", ev(metrics=CLOSE, within_tolerance=True, degenerate=ZEROS), v.INCONCLUSIVE),
    ("npu pass, degenerate", ev(mode="npu", metrics=CLOSE, within_tolerance=True, output_written=True,
                                degenerate=ZEROS), v.INCONCLUSIVE),
    ("degenerate but a tensor no launch was handed", ev(metrics=CLOSE, within_tolerance=True, degenerate=ZEROS,
                                                        unlaunched_output=True), v.SUSPECT_FAKE_PASS),
    ("degenerate but a golden fallback", ev(mode="npu", metrics=CLOSE, within_tolerance=True, output_written=True,
                                            golden_fallback=True, degenerate=ZEROS), v.SUSPECT_FAKE_PASS),
    ("degenerate but no launch", ev(kernel_launches=0, metrics=CLOSE, within_tolerance=True, degenerate=ZEROS),
     v.SUSPECT_FAKE_PASS),
    ("degenerate but changed after the launch", ev(mode="npu", metrics=CLOSE, within_tolerance=True,
                                                   changed_after_launch=True, degenerate=ZEROS), v.SUSPECT_FAKE_PASS),
    ("degenerate, graph fail wins", ev(metrics=CLOSE, within_tolerance=True, graph_status="fail", degenerate=ZEROS),
     v.GRAPH_FAIL),
    ("degenerate and no match", ev(degenerate=ZEROS), v.SIM_OUTPUT_UNWRITTEN),
    ("script sim passed, degenerate", ev(is_script=True, exit_code=0, asserts_passed=1, metrics=CLOSE,
                                         output_written=True, degenerate=ZEROS), v.INCONCLUSIVE),
    ("script npu passed, degenerate", ev(is_script=True, mode="npu", exit_code=0, asserts_passed=1,
                                         output_written=True, degenerate=ZEROS), v.INCONCLUSIVE),
    ("script npu failed and passed, degenerate", ev(is_script=True, mode="npu", exit_code=0, asserts_passed=1,
                                                    markers={"precision_fail": 1}, output_written=True,
                                                    degenerate=ZEROS), v.PRECISION_FAIL),
    # the rule order: a cheat whose launch failed is a cheat, not "no kernel ran"
    ("script: failed launch caught, check passed", ev(is_script=True, exit_code=0, kernel_launches=0,
                                                      launches_reported=1, launch_failed=True, asserts_passed=1,
                                                      metrics=CLOSE), v.SUSPECT_FAKE_PASS),
    ("script: fallback lint, no launch, check passed", ev(is_script=True, exit_code=0, kernel_launches=0,
                                                          golden_fallback=True, markers={"precision_pass": 1},
                                                          metrics=None), v.SUSPECT_FAKE_PASS),
    ("script: failed launch, nothing passed", ev(is_script=True, exit_code=0, kernel_launches=0, launches_reported=1,
                                                 launch_failed=True, metrics=None), v.NOT_RUN),
]


@pytest.mark.parametrize("name,evidence,expected", DEGENERATE, ids=[c[0] for c in DEGENERATE])
def test_decide_on_degenerate_compares_and_failed_launches(name, evidence, expected):
    verdict, precision, reason = decide(evidence)
    assert verdict == expected, reason
    assert precision != "pass" or verdict == v.PASS
    if verdict == v.INCONCLUSIVE:
        assert evidence.degenerate in reason


def test_inconclusive_is_skipped_and_exits_0_in_both_modes():
    """A degenerate compare is neither a pass nor a defect: not judged (skipped), and no failure of the run."""
    from runtime import exit_codes

    assert exit_codes.of_case(v.INCONCLUSIVE, "sim") == exit_codes.of_case(v.INCONCLUSIVE, "npu") == exit_codes.OK
    assert exit_codes.outcome(v.INCONCLUSIVE, "sim") == exit_codes.SKIPPED_OUTCOME
    cases = [{"verdict": v.INCONCLUSIVE, "stage": "compare"}, {"verdict": v.SIM_GARBAGE_GRAPH_OK, "stage": "compare"}]
    assert exit_codes.of_cases(cases, "sim") == exit_codes.OK
