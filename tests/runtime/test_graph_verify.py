"""Graph verify: availability, pass-level checks and their cost guard, with real pypto."""
from __future__ import annotations

import json
import shutil

import pytest

from runtime.evidence import calculator, graph_verify
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow  # runs real pypto compiles


def test_other_pypto_versions_are_refused_clearly():
    assert graph_verify.version_problem("0.2.0") is None
    note = graph_verify.version_problem("0.3.0.dev20260101+gabc")
    assert note.startswith("graph verify unavailable: pypto 0.3.0.dev20260101+gabc not supported")
    assert "0.2.0" in note


def test_an_unsupported_pypto_needs_no_calculator(tmp_path):
    ready, reason = calculator.status(tmp_path, pypto_version="9.9.9.dev0")
    assert not ready and reason == graph_verify.version_problem("9.9.9.dev0")
    ready, reason = calculator.status(tmp_path, pypto_version="0.2.0")
    assert not ready and "crosscheck calculator build" in reason


def test_without_calculator_graph_verify_is_unavailable_and_the_job_runs(warm_sim, tmp_path):
    report = run_submission(EXAMPLES / "scale_add", RunOptions(cache_dir=tmp_path / "empty-cache",
                                                               work_dir=tmp_path / "w"), warm=warm_sim)
    for case in report.cases:
        assert case.verdict == "sim_output_unwritten"
        assert case.graph_verify["status"] == "unavailable"
        assert "crosscheck calculator build" in case.graph_verify["reason"]
        # the host's state, not the kernel's: the service never reuses such a result (docs/ci.md)
        assert case.graph_verify["rule"] == graph_verify.CALCULATOR_NOT_READY


def test_graph_verify_turned_off_is_not_the_calculator_missing(warm_sim, tmp_path):
    report = run_submission(EXAMPLES / "scale_add", RunOptions(cache_dir=tmp_path / "empty-cache", graph_verify=False,
                                                               work_dir=tmp_path / "w"), warm=warm_sim)
    assert [c.graph_verify["status"] for c in report.cases] == ["unavailable"] * len(report.cases)
    assert not any("rule" in c.graph_verify for c in report.cases)


def test_the_cache_check_without_torch_agrees_with_the_exact_one(calculator_cache, tmp_path):
    assert calculator.cached_for_installed(calculator_cache) and calculator.status(calculator_cache)[0]
    assert not calculator.cached_for_installed(tmp_path)
    other = tmp_path / "calculator" / "pypto-0.1.9_torch-2.13.0-cpu_abi1" / "lib"  # another pypto's build
    other.mkdir(parents=True)
    (other / calculator.LIB_NAME).write_bytes(b"")
    assert not calculator.cached_for_installed(tmp_path) and not calculator.status(tmp_path)[0]


def test_verify_passes_checks_every_lowered_pass(warm_sim, calculator_cache, tmp_path):
    options = RunOptions(cache_dir=calculator_cache, verify_passes=True, cases=["scale_add_32x64"],
                         work_dir=tmp_path)
    case = run_submission(EXAMPLES / "scale_add", options, warm=warm_sim).cases[0]
    passes = case.graph_verify["passes"]
    assert passes["status"] == "pass" and passes["first_divergent_pass"] is None
    names = [r["passName"] for r in passes["rows"]]
    assert any(n.startswith("Pass_") for n in names), names
    assert all(r["referPassName"] == "tensor_graph" for r in passes["rows"] if r["passName"].startswith("Pass_"))


def test_expensive_pass_verify_is_skipped_with_a_reason(warm_sim, calculator_cache, tmp_path):
    pkg = tmp_path / "big"
    shutil.copytree(EXAMPLES / "dynamic_add", pkg)
    spec = json.loads((pkg / "test_cases.json").read_text())
    case = spec["test_cases"][0]
    case.update(id="big", verify_passes=True)
    for inp in case["inputs"]:
        inp["shape"] = [4096, 64]
    spec["test_cases"] = [case]
    (pkg / "test_cases.json").write_text(json.dumps(spec))
    result = run_submission(pkg, RunOptions(cache_dir=calculator_cache, timeout_s=40, work_dir=tmp_path / "w"),
                            warm=warm_sim).cases[0]
    assert result.verdict == "sim_garbage_graph_ok"
    passes = result.graph_verify["passes"]
    assert passes["status"] == "skipped" and "budget" in passes["reason"]
