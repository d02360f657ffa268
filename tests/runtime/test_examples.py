"""Every example gets its expected verdict from the real runtime and real pypto (manifest)."""
from __future__ import annotations

import json

import pytest
import torch

from runtime.evidence import mismatch_map
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow  # runs real pypto compiles

MANIFEST = json.loads((EXAMPLES / "manifest.json").read_text())
NAMES = sorted(MANIFEST["examples"])
CORRECT = [n for n in NAMES if MANIFEST["examples"][n]["sim"] == "sim_garbage_graph_ok"]


@pytest.fixture(scope="module")
def graph_reports(warm_sim, calculator_cache, tmp_path_factory):
    reports = {}
    for name in NAMES:
        options = RunOptions(cache_dir=calculator_cache, work_dir=tmp_path_factory.mktemp(name))
        reports[name] = run_submission(EXAMPLES / name, options, warm=warm_sim)
    return reports


@pytest.mark.parametrize("name", NAMES)
def test_example_verdict_with_graph_verify(graph_reports, name):
    expected = MANIFEST["examples"][name]
    report = graph_reports[name]
    assert report.cases, name
    for case in report.cases:
        assert case.verdict == expected["sim"], (case.case, case.verdict_reason, case.error)
        if "diagnosis" in expected:
            assert case.diagnosis and case.diagnosis[0].rule == expected["diagnosis"], case.diagnosis
    assert sorted({f.rule for f in report.lint}) == sorted(expected["lint"]), report.lint


@pytest.mark.parametrize("name", CORRECT)
def test_correct_examples_graph_metrics_and_sim_garbage(graph_reports, name):
    for case in graph_reports[name].cases:
        gv = case.graph_verify
        assert gv["status"] == "pass" and gv["metrics"]["max_abs_diff"] <= 1e-6, gv
        assert gv["pypto"]["result"] in ("pass", "no_compare")
        # The raw SIM view is kept: SIM wrote nothing, so these are the buffer's old bytes.
        m = case.metrics
        assert case.output_written is False and m["mismatch_count"] > 0
        assert m["max_abs_diff"] is not None or m["nan_count"] + m["inf_count"] > 0
        assert case.precision == "not_applicable"
        assert case.kernel_launches >= 1 and case.cost_model and case.cost_model.aicore_time_us > 0
        assert [s.name for s in case.stages] == ["syntax", "lint", "golden", "sim", "compare"]
        assert all(s.status == "ok" for s in case.stages)


def test_wrong_maths_true_magnitude(graph_reports):
    # The kernel computes x*3+y against a golden of x*2+y: the error is exactly |x|.
    spec = json.loads((EXAMPLES / "wrong_maths" / "test_cases.json").read_text())["test_cases"]
    for case, raw in zip(graph_reports["wrong_maths"].cases, spec):
        torch.manual_seed(raw["seed"])
        shape = raw["inputs"][0]["shape"] if "inputs" in raw else raw["input"]["shape"]
        x = torch.randn(shape)
        assert case.graph_verify["metrics"]["max_abs_diff"] == pytest.approx(float(x.abs().max()), rel=1e-5)
        assert case.graph_verify["pypto"]["result"] == "fail"


def test_unwritten_output_is_caught(graph_reports):
    case = graph_reports["unwritten_output"].cases[0]
    assert case.graph_verify["output_written"] is False
    assert "never wrote" in case.graph_verify["reason"]


def test_tiling_bug_tail_rows(graph_reports):
    case = graph_reports["tiling_bug"].cases[0]
    assert case.graph_verify["metrics"]["mismatch_ratio"] == pytest.approx(8 / 40)
    where = case.graph_verify["metrics"][mismatch_map.KEY]  # the harness's map: exactly the last 8 rows lit
    assert mismatch_map.lit(where) == ([(32, 39)], [(0, 63)]) and where["first"][0] == 32 * 64


@pytest.mark.parametrize("name", ["scale_add", "softmax", "wrong_maths", "golden_fallback", "missing_cube_tiles"])
def test_example_verdict_plain_sim(warm_sim, tmp_path, name):
    report = run_submission(EXAMPLES / name, RunOptions(graph_verify=False, work_dir=tmp_path), warm=warm_sim)
    for case in report.cases:
        assert case.verdict == MANIFEST["examples"][name]["sim_plain"], case.verdict_reason
        if case.graph_verify is not None:
            assert case.graph_verify["status"] == "unavailable"


@pytest.mark.parametrize("script,spec", sorted(MANIFEST["scripts"].items()))
def test_script_examples(warm_sim, tmp_path, script, spec):
    report = run_submission(EXAMPLES / script, RunOptions(work_dir=tmp_path), warm=warm_sim)
    assert [c.case for c in report.cases] == spec["cases"]
    for case in report.cases:
        assert case.verdict == spec["sim"], case.verdict_reason
        assert case.kernel_launches >= 1 and case.script["exit_code"] == 0


def test_parallel_cases_keep_order_and_verdicts(warm_sim, calculator_cache, tmp_path):
    options = RunOptions(cache_dir=calculator_cache, parallel=3, work_dir=tmp_path)
    report = run_submission(EXAMPLES / "dynamic_add", options, warm=warm_sim)
    spec = json.loads((EXAMPLES / "dynamic_add" / "test_cases.json").read_text())["test_cases"]
    assert [c.case for c in report.cases] == [c["id"] for c in spec]
    assert {c.verdict for c in report.cases} == {"sim_garbage_graph_ok"}


def test_stopping_after_the_first_case_leaves_the_warm_parent_usable(warm_sim, tmp_path):
    seen = []
    report = run_submission(EXAMPLES / "dynamic_add", RunOptions(graph_verify=False, parallel=2, work_dir=tmp_path),
                            warm=warm_sim, on_case=lambda case, done, total: seen.append(case.case) or False)
    assert report.cancelled and len(report.cases) == 1 and seen == [report.cases[0].case]
    again = run_submission(EXAMPLES / "relu", RunOptions(graph_verify=False, work_dir=tmp_path / "again"), warm=warm_sim)
    assert {c.verdict for c in again.cases} == {"sim_output_unwritten"}


CHECKOUT_OPS = [(tree, name, spec) for tree, ops in sorted(MANIFEST.get("checkouts", {}).items())
                for name, spec in sorted(ops.items())]


@pytest.mark.parametrize("tree,name,spec", [pytest.param(*o, marks=pytest.mark.slow) if o[2].get("slow") else o
                                            for o in CHECKOUT_OPS], ids=[f"{t}:{n}" for t, n, _ in CHECKOUT_OPS])
def test_checkout_operators(warm_sim, calculator_cache, tmp_path, tree, name, spec):
    """Each operator of a gym-shaped checkout, found and run as `crosscheck run CHECKOUT --op NAME` does."""
    from runtime.intake.discover import discover
    from runtime.intake.submission import load_operator as load

    (op,) = discover(EXAMPLES / tree, [name])
    assert (op.route, op.cases) == (spec["route"], spec["cases"]), op.problem
    report = run_submission(EXAMPLES / tree, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path), warm=warm_sim,
                            loaded=load(EXAMPLES / tree, op))
    assert [c.case for c in report.cases] == spec["cases"]
    for case in report.cases:
        assert case.verdict == spec["sim"], (case.case, case.verdict_reason, case.error)
        assert case.graph_verify["status"] == spec["graph"], case.graph_verify
        assert case.kernel_launches >= 1 and case.cost_model is not None
