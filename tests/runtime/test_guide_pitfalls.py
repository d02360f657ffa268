"""The SIM debugging guide's pitfalls as verdicts and case diagnoses (issue 31; docs/pypto.md §9).

Each kernel is our own, one pitfall each: tests/fixtures/pitfalls/ and tests/fixtures/diagnosis/.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime import verdicts
from runtime.judge import pitfalls
from runtime.judge.diagnose import diagnose, load_rules
from runtime.judge.skew import detect
from runtime.lint import VERSION_SKEW_RULES, TilePlan, lint_source, vec_tile_plans
from runtime.report import CaseResult, Diagnosis, ErrorInfo, Launch, LintFinding
from runtime.runner import RunOptions, run_submission

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PITFALLS = FIXTURES / "pitfalls"
DIAGNOSIS = FIXTURES / "diagnosis"
RULES = {r.id: r for r in load_rules()}
needs_pypto = pytest.mark.skipif(importlib.util.find_spec("pypto") is None, reason="pypto is not installed")


def findings(src: str, rule: str) -> list[LintFinding]:
    return [f for f in lint_source(textwrap.dedent(src), "op_impl.py") if f.rule == rule]


KERNEL = """\
import pypto


@pypto.frontend.jit
def k(x: pypto.Tensor({shape}, pypto.DT_FP32), out: pypto.Tensor({shape}, pypto.DT_FP32)):
    {body}
"""


# --- return annotations: a structural error, never version skew -------------------------------------------


def test_a_return_annotation_is_no_version_skew():
    finding = LintFinding("return-annotation", "error", "op_impl.py", 6, "...", "", "-> None")
    error = ErrorInfo("RenderedParserError", "ValueError: Return annotation is not allowed. Use an out parameter "
                      "and out.move(...) inside the kernel instead.", "op_impl.py", 6)
    assert "return-annotation" not in VERSION_SKEW_RULES
    assert detect(error, "", [finding], "0.2.0") is None


def test_the_return_annotation_diagnosis_says_remove_it_first():
    [first, *_] = diagnose(stage="sim", mode="sim", exception="ValueError: Return annotation is not allowed.")
    assert first.rule == "return-annotation" and first.fix.startswith("Remove the `-> ...` annotation")
    assert "pypto it was written for" not in first.fix and "--pypto" not in first.fix
    [lint] = findings(KERNEL.format(shape="[32, 64]", body="out[:] = x + 1.0").replace("):\n", ") -> None:\n", 1),
                      "return-annotation")
    assert "remove it" in lint.message and "pypto it was written for" not in lint.message


# --- symbolic slice bounds ---------------------------------------------------------------------------------


def test_cannot_convert_symbols_names_the_slice_and_pypto_view():
    stdout = "ERROR /s/op_impl.py:14:15: TypeError: Cannot convert symbols to int\n14 |  part = x[i * 16:stop, :]"
    [first, *_] = diagnose(stage="sim", mode="sim", stdout=stdout,
                           stderr="ERROR:root:Record function kernel failed: TypeError: Cannot convert symbols to int",
                           exception="RenderedParserError: TypeError: Cannot convert symbols to int")
    assert first.rule == "slice-symbolic-bounds" and (first.file, first.line) == ("/s/op_impl.py", 14)
    assert "x[start:stop]" in first.cause and "valid_shape" in first.fix and "pypto.view" in first.fix


# --- future annotations: raised at the call, caused at the import ------------------------------------------


def test_a_non_tensor_parameter_error_is_placed_at_the_future_import():
    body = "pypto.set_vec_tile_shapes(16, 64)\n    out[:] = x + 1.0"
    src = "from __future__ import annotations\n\n" + KERNEL.format(shape="[32, 64]", body=body)
    lint = lint_source(src, "op_impl.py")
    [first] = [d for d in diagnose(stage="sim", mode="sim", exception="RuntimeError: Non-tensor parameter 'x' must "
                                   "not be a torch.Tensor", stderr='File "/job/src/op_impl.py", line 20, in wrapper')
               if d.rule == "tensor-param-not-annotated"]
    case = CaseResult(operator="op", case="c1", verdict=verdicts.STRUCTURAL_ERROR, diagnosis=[first])
    [d] = pitfalls.annotate(pitfalls.annotate(case, lint, "sim"), lint, "sim").diagnosis
    assert (d.file, d.line) == ("op_impl.py", 1) and d.cause.startswith("At op_impl.py:1: 'from __future__ import")
    assert d.cause.count("At op_impl.py:1") == 1


# --- a view's shape, offsets and valid_shape lengths ------------------------------------------------------


@pytest.mark.parametrize("view, told", [
    ("pypto.view(x, [1, 16, 64], [i * 16, 0])", "shape has 3, offsets has 2"),
    ("pypto.view(x, [16, 64], [i * 16, 0, 0])", "shape has 2, offsets has 3"),
    ("pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[16])", "shape has 2, offsets has 2, valid_shape has 1"),
    ("pypto.view(x, shape=[16, 64], offsets=[i * 16])", "shape has 2, offsets has 1"),
])
def test_lint_names_the_view_lists_of_different_lengths(view, told):
    body = f"pypto.set_vec_tile_shapes(16, 64)\n    for i in pypto.loop(2):\n        part = {view}\n" \
           "        pypto.assemble(part + 1.0, [i * 16, 0], out)"
    [found] = findings(KERNEL.format(shape="[32, 64]", body=body), "view-rank-mismatch")
    assert found.line == 8 and found.subject == told


def test_lint_quiet_on_a_view_whose_lists_agree():
    body = "pypto.set_vec_tile_shapes(16, 64)\n    for i in pypto.loop(2):\n" \
           "        part = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[16, 64])\n" \
           "        pypto.assemble(part + 1.0, [i * 16, 0], out)"
    assert findings(KERNEL.format(shape="[32, 64]", body=body), "view-rank-mismatch") == []


def _view_case(error_line: int) -> CaseResult:
    diag = Diagnosis("view-valid-shape-rank", RULES["view-valid-shape-rank"].cause, RULES["view-valid-shape-rank"].fix,
                     False, stage="sim", evidence="Their size actually are 2 and 3", origin="stderr",
                     file="/job/src/op_impl.py", line=error_line)
    return CaseResult(operator="op", case="c1", verdict="structural_error", stage="sim", diagnosis=[diag])


def test_a_view_diagnosis_moves_to_the_views_own_line():
    view = LintFinding("view-rank-mismatch", "error", "op_impl.py", 12, "...",
                       "part = pypto.view(x, [1, 16, 64], [i * 16, 0])", "shape has 3, offsets has 2")
    case = pitfalls.annotate(pitfalls.annotate(_view_case(18), [view], "sim"), [view], "sim")  # twice: once
    [d] = case.diagnosis
    assert d.rule == "view-valid-shape-rank" and (d.file, d.line) == ("op_impl.py", 12)
    assert "op_impl.py:12" in d.cause and "shape has 3, offsets has 2" in d.cause
    assert "Their size actually are 2 and 3" in d.cause and d.cause.count("The pypto.view at") == 1
    assert pitfalls.annotate(_view_case(18), [], "sim").diagnosis[0].line == 18  # no finding: left as it was


# --- vec tiles that do not divide the dims they tile --------------------------------------------------------


def test_lint_names_the_dims_a_vec_tile_does_not_divide():
    [found] = findings(KERNEL.format(shape="[1, 16, 4, 32]", body="pypto.set_vec_tile_shapes(8, 8, 8, 8)\n"
                                     "    out[:] = x + 1.0"), "vec-tiles-not-dividing")
    assert found.line == 6 and found.severity == "warning"
    assert found.subject == "tile 8 on dim 0 of size 1, tile 8 on dim 2 of size 4"
    assert "107003" in found.message


@pytest.mark.parametrize("shape, body", [
    ("[1, 16, 4, 32]", "pypto.set_vec_tile_shapes(1, 8, 4, 32)\n    out[:] = x + 1.0"),  # dividing
    ("[1, 16, 4, 32]", "pypto.set_vec_tile_shapes(8, 8, 8, 8)\n    y = x + 1.0\n"  # one of two tile sets divides
                       "    pypto.set_vec_tile_shapes(1, 16, 4, 32)\n    out[:] = y * 2.0"),
    ("[pypto.DYNAMIC, 64]", "pypto.set_vec_tile_shapes(16, 64)\n    out[:] = x + 1.0"),  # size unknown here
    ("[40, 64]", "pypto.set_vec_tile_shapes(16, 64)\n    for i in pypto.loop(3):\n"  # tail by valid_shape
                 "        part = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[pypto.min(40 - i * 16, 16), 64])\n"
                 "        pypto.assemble(part + 1.0, [i * 16, 0], out)"),
])
def test_lint_quiet_when_the_tiles_divide_or_the_dims_are_unknown(shape, body):
    assert findings(KERNEL.format(shape=shape, body=body), "vec-tiles-not-dividing") == []


def test_tiles_that_do_not_divide_warn_on_an_acceptable_sim_case():
    tiles = LintFinding("vec-tiles-not-dividing", "warning", "op_impl.py", 6, "...",
                        "pypto.set_vec_tile_shapes(8, 8, 8, 8)", "tile 8 on dim 0 of size 1")
    noise = Diagnosis("noise-swimlane-matplotlib", "c", "f", True)
    case = CaseResult(operator="op", case="c1", verdict=verdicts.SIM_GARBAGE_GRAPH_OK, stage="compare",
                      diagnosis=[noise])
    pitfalls.annotate(case, [tiles], "sim")
    pitfalls.annotate(case, [tiles], "sim")  # a rerun's case passes here again: still once
    assert [d.rule for d in case.diagnosis] == ["vec-tiles-not-dividing", "noise-swimlane-matplotlib"]
    assert "dim 0 of size 1" in case.diagnosis[0].cause and "107003" in case.diagnosis[0].cause
    assert case.verdict == verdicts.SIM_GARBAGE_GRAPH_OK  # SIM accepts it
    npu_pass = CaseResult(operator="op", case="c1", verdict=verdicts.PASS)
    assert pitfalls.annotate(npu_pass, [tiles], "npu").diagnosis == []  # the NPU ran it: nothing to warn of


def test_tiles_that_do_not_divide_a_launchs_shapes_warn_when_the_source_cannot_tell():
    plans = {"k": [TilePlan("op_impl.py", 6, (8, 8, 8, 8))]}
    launch = Launch(kernel="k", output_written=[False, False], arg_shapes=[[1, 16, 4, 32], [1, 16, 4, 32]])
    case = CaseResult(operator="op", case="bthk", verdict=verdicts.SIM_GARBAGE_GRAPH_OK, launches=[launch])
    [d] = pitfalls.annotate(case, [], "sim", plans).diagnosis
    assert d.rule == "vec-tiles-not-dividing" and (d.file, d.line, d.origin) == ("op_impl.py", 6, "launch")
    assert "shape [1, 16, 4, 32] (tile 8 on dim 0 of size 1, tile 8 on dim 2 of size 4)" in d.cause
    fits = Launch(kernel="k", output_written=[False, False], arg_shapes=[[8, 16, 8, 32], [8, 16, 8, 32]])
    dividing = CaseResult(operator="op", case="ok", verdict=verdicts.SIM_GARBAGE_GRAPH_OK, launches=[fits])
    assert pitfalls.annotate(dividing, [], "sim", plans).diagnosis == []
    two = {"k": [*plans["k"], TilePlan("op_impl.py", 9, (1, 16, 4, 32))]}  # a second tile set divides it
    assert pitfalls.annotate(CaseResult(operator="op", case="bthk", verdict=verdicts.SIM_GARBAGE_GRAPH_OK,
                                        launches=[launch]), [], "sim", two).diagnosis == []
    other = CaseResult(operator="op", case="ok", verdict=verdicts.SIM_GARBAGE_GRAPH_OK,
                       launches=[Launch(kernel="other", output_written=[False], arg_shapes=[[1, 16, 4, 32]])])
    assert pitfalls.annotate(other, [], "sim", plans).diagnosis == []  # another kernel's tiles


def test_vec_tile_plans_are_the_kernels_constant_tiles(tmp_path):
    (tmp_path / "op_impl.py").write_text(KERNEL.format(shape="[]", body="pypto.set_vec_tile_shapes(8, 16)\n"
                                                       "    out[:] = x + 1.0"))
    (tmp_path / "tail_impl.py").write_text(KERNEL.format(shape="[]", body=(
        "pypto.set_vec_tile_shapes(16, 64)\n    for i in pypto.loop(3):\n"
        "        part = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[8, 64])\n"
        "        pypto.assemble(part + 1.0, [i * 16, 0], out)")).replace("def k(", "def tail("))
    plans = vec_tile_plans(sorted(tmp_path.glob("*.py")), tmp_path)
    assert plans == {"k": [TilePlan("op_impl.py", 6, (8, 16))], "tail": []}  # valid_shape: the tail is handled


def test_stitch_options_on_a_simple_kernel_warn_on_the_case():
    src = KERNEL.format(shape="[32, 64]", body="pypto.set_vec_tile_shapes(16, 64)\n    out[:] = x + 1.0").replace(
        "@pypto.frontend.jit", '@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})')
    [found] = findings(src, "stitch-on-simple-kernel")
    case = CaseResult(operator="op", case="c1", verdict=verdicts.SIM_OUTPUT_UNWRITTEN, stage="sim")
    [d] = pitfalls.annotate(case, [found], "sim").diagnosis
    assert d.rule == "stitch-on-simple-kernel" and d.line == 4 and "'stitch_function_max_num'" in d.cause
    assert "107003" in d.cause and verdicts.acceptable(case.verdict, "sim")


# --- run_mode bound at import, --run_mode parsed in main() -------------------------------------------------


LATE = """\
import argparse
import pypto

RUN_MODE = pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": RUN_MODE})
def k(x: pypto.Tensor([32, 64], pypto.DT_FP32), out: pypto.Tensor([32, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = x + 1.0


def main():
    global RUN_MODE
    args = argparse.ArgumentParser().parse_args()
    RUN_MODE = pypto.RunMode.SIM
"""


def test_the_late_run_mode_finding_carries_the_import_time_value():
    [found] = findings(LATE, "argv-run-mode-in-main")
    assert found.subject == "RUN_MODE = pypto.RunMode.NPU"


def test_a_script_case_says_its_own_sim_run_fails_and_why():
    [found] = findings(LATE, "argv-run-mode-in-main")
    case = CaseResult(operator="late", case="main", verdict=verdicts.SIM_GARBAGE_GRAPH_OK, stage="sim",
                      verdict_reason="graph verify matched", script={"exit_code": 0})
    pitfalls.annotate(case, [found], "sim")
    [d] = case.diagnosis
    assert d.rule == "script-run-mode-at-import" and (d.file, d.line) == ("op_impl.py", 7)
    assert "Not npu device" in d.cause and "RUN_MODE = pypto.RunMode.NPU" in d.cause and "forces" in d.cause
    assert "_peek_run_mode_from_argv" in d.fix
    assert case.verdict_reason.startswith("graph verify matched; but the script's own run differs")
    package = CaseResult(operator="late", case="c1", verdict=verdicts.SIM_GARBAGE_GRAPH_OK)
    assert pitfalls.annotate(package, [found], "sim").diagnosis == []  # a wrapper gets no --run_mode


# --- real runs ---------------------------------------------------------------------------------------------


def _run(path: Path, warm, tmp_path: Path):  # type: ignore[no-untyped-def]
    return run_submission(path, RunOptions(cache_dir=tmp_path / "cache", work_dir=tmp_path / "work",
                                           graph_verify=False, timeout_s=60), warm=warm)


@needs_pypto
@pytest.mark.slow
def test_a_return_annotation_is_a_structural_error_whose_fix_is_to_remove_it(warm_sim, tmp_path):
    report = _run(PITFALLS / "return_annotation", warm_sim, tmp_path)
    [case] = report.cases
    assert case.verdict == verdicts.STRUCTURAL_ERROR and case.version_skew is None, (case.verdict, case.error)
    assert case.diagnosis[0].rule == "return-annotation" and case.diagnosis[0].fix.startswith("Remove")


@needs_pypto
@pytest.mark.slow
def test_a_symbolic_slice_is_diagnosed_at_the_slice(warm_sim, tmp_path):
    [case] = _run(DIAGNOSIS / "slice-symbolic-bounds", warm_sim, tmp_path).cases
    first = case.diagnosis[0]
    assert case.verdict == verdicts.STRUCTURAL_ERROR and first.rule == "slice-symbolic-bounds", case.diagnosis
    assert first.file.endswith("slice_symbolic_bounds_impl.py") and first.line == 14


@needs_pypto
@pytest.mark.slow
def test_a_views_shape_and_offsets_mismatch_is_placed_at_the_view(warm_sim, tmp_path):
    [case] = _run(DIAGNOSIS / "view-shape-offsets", warm_sim, tmp_path).cases
    first = case.diagnosis[0]
    assert case.verdict == verdicts.STRUCTURAL_ERROR and first.rule == "view-valid-shape-rank", case.diagnosis
    assert first.file == "view_shape_offsets_impl.py" and first.line == 12
    assert "shape has 3, offsets has 2" in first.cause
    assert case.error is not None and "SetOpAttribute" in case.error.message  # what pypto raises instead


@needs_pypto
@pytest.mark.slow
def test_tiles_that_do_not_divide_are_acceptable_in_sim_with_a_warning(warm_sim, tmp_path):
    [case] = _run(PITFALLS / "tiles_not_dividing", warm_sim, tmp_path).cases
    assert verdicts.acceptable(case.verdict, "sim") and case.kernel_launches == 1, (case.verdict, case.error)
    [warning] = [d for d in case.diagnosis if d.rule == "vec-tiles-not-dividing"]
    assert "tile 8 on dim 0 of size 1" in warning.cause and "tile 8 on dim 2 of size 4" in warning.cause


@needs_pypto
@pytest.mark.slow
def test_tiles_that_do_not_divide_the_inputs_shapes_warn_on_that_case_only(warm_sim, tmp_path):
    report = _run(PITFALLS / "tiles_from_input", warm_sim, tmp_path)
    assert not [f for f in report.lint if f.rule == "vec-tiles-not-dividing"]  # the source gives no sizes
    cases = {c.case: c for c in report.cases}
    assert all(verdicts.acceptable(c.verdict, "sim") for c in cases.values()), [c.verdict for c in cases.values()]
    [warning] = [d for d in cases["bthk"].diagnosis if d.rule == "vec-tiles-not-dividing"]
    assert "tile 8 on dim 0 of size 1, tile 8 on dim 2 of size 4" in warning.cause and warning.line == 9
    assert not [d for d in cases["dividing"].diagnosis if d.rule == "vec-tiles-not-dividing"]


@needs_pypto
@pytest.mark.slow
def test_a_run_mode_bound_at_import_fails_the_scripts_own_sim_run_and_the_case_says_so(warm_sim, tmp_path):
    script = PITFALLS / "late_run_mode.py"
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_HOME_PATH"}
    env.update(TILE_FWK_OUTPUT_DIR=str(tmp_path / "out"), ASCEND_PROCESS_LOG_PATH=str(tmp_path / "log"))
    (tmp_path / "out").mkdir()
    own = subprocess.run([sys.executable, str(script), "--run_mode", "sim"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert own.returncode != 0 and "Not npu device" in own.stderr  # the script's own SIM run
    [case] = _run(script, warm_sim, tmp_path).cases
    # crosscheck forces SIM on every launch, so the kernel itself was judged ...
    assert verdicts.acceptable(case.verdict, "sim") and case.kernel_launches == 1, (case.verdict, case.error)
    # ... and the case says the script's own run fails, and why
    [d] = [d for d in case.diagnosis if d.rule == "script-run-mode-at-import"]
    assert "Not npu device" in d.cause and d.line == 14  # the decorator
    assert "Not npu device" in case.verdict_reason
