"""KernelBench tasks and their operators, run through the real runtime and real pypto (docs/kernelbench.md).

Each operator dir is written for the tests (tests/runtime/kernelbench_tasks.py); the verdicts come from
graph verify and the job's data flow, and map to the gym's final_verdict.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.errors import SubmissionError
from runtime.intake import kernelbench
from runtime.intake.submission import load, load_task
from runtime.runner import RunOptions, run_submission
from tests.conftest import REPO
from tests.runtime import kernelbench_tasks as tasks

EXPECTED = {  # kind -> (our verdict, the gym's final_verdict, failure_category)
    "correct": ("sim_garbage_graph_ok", "PASS", ""),
    "wrong": ("graph_fail", "FAIL_CORRECTNESS", "CORRECTNESS_NUMERICAL"),
    "fallback": ("suspect_fake_pass", "FAIL_CHEAT", "CHEAT_SEMANTIC"),
    "two_path": ("suspect_fake_pass", "FAIL_CHEAT", "CHEAT_SEMANTIC"),
    "two_kernels": ("suspect_fake_pass", "FAIL_CHEAT", "CHEAT_MULTI_KERNEL"),
    "state_dict": ("structural_error", "FAIL_CORRECTNESS", "CORRECTNESS_SHAPE_OR_IO"),
    "helper": ("sim_garbage_graph_ok", "PASS", ""),
    "wrapper_only": ("structural_error", "FAIL_CORRECTNESS", "CORRECTNESS_SHAPE_OR_IO"),
    "suspicious_comment": ("sim_garbage_graph_ok", "PASS", ""),
    "maths_before": ("suspect_fake_pass", "FAIL_CHEAT", "CHEAT_SEMANTIC"),
    "maths_after": ("suspect_fake_pass", "FAIL_CHEAT", "CHEAT_SEMANTIC"),
    "layout_moves": ("sim_garbage_graph_ok", "PASS", ""),
    "passes_off": ("suspect_fake_pass", "FAIL_CHEAT", "CHEAT_SEMANTIC"),
    "compile_stopped": ("not_run", "FAIL_CHEAT", "CHEAT_SEMANTIC"),
}


@pytest.mark.parametrize("stem, name", [
    ("23_Softmax", "Softmax"), ("33_Gemm_Scale_BatchNorm", "Gemm_Scale_BatchNorm"),
    ("12_Matmul_with_diagonal_matrices_", "Matmul_with_diagonal_matrices"), ("1_3D conv-x", "op_3D_conv_x"),
    ("MLP", "MLP"),
])
def test_op_name_follows_the_gym(stem, name):
    assert kernelbench.op_name(stem) == name


def test_an_operator_dir_with_its_task_is_a_submission(tmp_path):
    folder = tasks.write(tmp_path, "BiasReLU")
    sub = load(folder, tmp_path / "work")
    assert (sub.name, sub.task, sub.impl.function, sub.golden.function) == \
        ("BiasReLU", "task_desc.py", "ModelNew", "Model")
    assert [c.id for c in sub.case_file.cases] == ["task"] and sub.case_file.cases[0].rtol == 1e-3


def test_a_task_elsewhere_names_the_operator(tmp_path):
    folder = tasks.write(tmp_path, "Gemm_Scale_BatchNorm")
    level = tmp_path / "KernelBench" / "level2"
    level.mkdir(parents=True)
    task = level / "33_Gemm_Scale_BatchNorm.py"
    task.write_text(tasks.BIAS_RELU_TASK)
    sub = load_task(folder, task)
    assert sub.name == "Gemm_Scale_BatchNorm" and sub.task == "KernelBench/level2/33_Gemm_Scale_BatchNorm.py"
    assert "custom/Gemm_Scale_BatchNorm/Gemm_Scale_BatchNorm_impl.py" in sub.files
    other = level / "39_Softmax.py"
    other.write_text(tasks.BIAS_RELU_TASK)
    with pytest.raises(SubmissionError, match="missing Softmax_impl.py"):
        load_task(folder, other)


def test_a_file_that_is_no_task_is_refused_by_name(tmp_path):
    folder = tasks.write(tmp_path, "BiasReLU")
    (folder / "task_desc.py").write_text("import torch\n\ndef get_inputs():\n    return []\n")
    with pytest.raises(SubmissionError, match="missing Model, get_init_inputs"):
        load_task(folder)


@pytest.fixture(scope="module")
def gym_runs(warm_sim, calculator_cache, tmp_path_factory):
    """Every kind run once, in one warm parent; (report, the gym's skill_report.json)."""
    from runtime.cli import gym_report

    runs = {}
    for kind in EXPECTED:
        root = tmp_path_factory.mktemp(kind)
        sub = load_task(tasks.write(root, "BiasReLU", kind))
        report = run_submission(sub.root, RunOptions(cache_dir=calculator_cache, work_dir=root / "work"),
                                warm=warm_sim, loaded=sub)
        gym_report.write(report, sub.root, sub.files, sub.task, root / "gym")
        runs[kind] = report, json.loads((root / "gym" / "skill_report.json").read_text())
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(EXPECTED))
def test_each_operator_gets_the_verdict_the_gym_would_give(gym_runs, kind):
    report, skill = gym_runs[kind]
    verdict, final, category = EXPECTED[kind]
    case = report.cases[0]
    assert case.verdict == verdict, (case.verdict, case.verdict_reason)
    assert (skill["final_verdict"], skill["failure_category"]) == (final, category), skill["final_reasoning"]


@pytest.mark.slow
def test_wrong_maths_is_decided_by_graph_evidence(gym_runs):
    report, skill = gym_runs["wrong"]
    graph = report.cases[0].graph_verify or {}
    assert graph.get("status") == "fail" and skill["correctness"]["status"] == "failed"


@pytest.mark.slow
def test_the_weight_is_an_input_of_the_kernel_not_an_output(gym_runs):
    report, _ = gym_runs["correct"]
    assigned = (report.cases[0].graph_verify or {}).get("goldens_registered") or []
    assert [a["name"] for a in assigned] == ["out"], assigned


@pytest.mark.slow
def test_cheat_classes_name_their_evidence(gym_runs):
    items = {i["id"]: i for i in gym_runs["two_kernels"][1]["cheat_check_semantic"]["items"]}
    assert items["S5"]["status"] == "fail" and "2 distinct" in items["S5"]["evidence"]
    assert {i["id"]: i["status"] for i in gym_runs["fallback"][1]["cheat_check_semantic"]["items"]}["S3"] == "fail"
    comment = gym_runs["suspicious_comment"][1]
    assert comment["cheat_check_script"]["verdict"] == "suspicious"
    assert "workaround" in comment["final_reasoning"] or "forbidden_text_patterns" in comment["final_reasoning"]


@pytest.mark.slow
def test_a_config_that_skips_work_is_s8_from_the_launches(gym_runs):
    for kind, option in (("passes_off", "disable_pass = 1"), ("compile_stopped", "compile_stage = 2")):
        report, skill = gym_runs[kind]
        s8 = {i["id"]: i for i in skill["cheat_check_semantic"]["items"]}["S8"]
        assert s8["status"] == "fail" and option in s8["evidence"] and "BiasReLU_impl.py:" in s8["evidence"], s8
    rules = [d.rule for d in gym_runs["compile_stopped"][0].cases[0].diagnosis]
    assert rules[0] == "compile-stopped-early" and "output-not-written" not in rules, rules
    assert gym_runs["passes_off"][0].cases[0].diagnosis[0].rule == "compiler-passes-off"
    assert {i["id"]: i["status"] for i in gym_runs["correct"][1]["cheat_check_semantic"]["items"]}["S8"] == "pass"


@pytest.mark.slow
def test_the_installed_cli_writes_the_gym_files_from_any_directory(tmp_path, calculator_cache):
    folder = tasks.write(tmp_path, "BiasReLU", "wrong")
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80", "CROSSCHECK_CACHE_DIR": str(calculator_cache)}
    done = subprocess.run([sys.executable, "-m", "runtime", "run", str(folder), "--format", "gym",
                           "--gym-dir", str(tmp_path / "out"), "--no-daemon"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["cheat_check_script.json", "skill_report.json", "verify_run.json"]
    run = json.loads((tmp_path / "out" / "verify_run.json").read_text())
    assert run["verdict_machine"] == "failed_correctness" and run["correctness"]["status"] == "failed"


@pytest.mark.slow
def test_maths_outside_the_kernel_names_the_op_and_the_line(gym_runs):
    before = gym_runs["maths_before"][0].cases[0]
    assert "S4: torch computed add on what the kernel then read at BiasReLU_pypto_impl.py:" \
        in before.verdict_reason, before.verdict_reason
    after = gym_runs["maths_after"][0].cases[0]
    assert "S4: torch computed relu on what the kernel wrote" in after.verdict_reason, after.verdict_reason
    items = {i["id"]: i for i in gym_runs["maths_before"][1]["cheat_check_semantic"]["items"]}
    assert items["S4"]["status"] == "fail" and "add" in items["S4"]["evidence"]
    assert {i["id"]: i["status"] for i in gym_runs["correct"][1]["cheat_check_semantic"]["items"]}["S4"] == "pass"


def test_cases_shapes_are_cases_of_their_own(tmp_path):
    folder = tasks.write(tmp_path, "BiasReLU")
    (folder / "task_desc.py").write_text(tasks.CASES_TASK)
    sub = load_task(folder)
    assert [(c.id, [i.shape for i in c.inputs]) for c in sub.case_file.cases] == [
        ("task", []), ("cases0", [[64, 128]]), ("cases1", [[32, 64]])]
    (folder / "task_desc.py").write_text(tasks.BIAS_RELU_TASK.replace("def get_inputs", "CASES = [[1]]\n\n\ndef get_inputs"))
    with pytest.raises(SubmissionError, match="CASES must be a string"):
        load_task(folder)


@pytest.mark.slow
def test_a_cases_shape_runs_with_its_own_inputs(tmp_path, warm_sim, calculator_cache):
    """The 64x128 entry matches the Model's bias and passes; at 32x64 the task's own Model cannot run: the
    reference failed, so nothing is said of the operator (not a kernel defect)."""
    folder = tasks.write(tmp_path, "BiasReLU")
    (folder / "task_desc.py").write_text(tasks.CASES_TASK)
    sub = load_task(folder)
    report = run_submission(sub.root, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"),
                            warm=warm_sim, loaded=sub)
    verdicts = {c.case: (c.verdict, c.stage) for c in report.cases}
    assert verdicts["task"][0] == verdicts["cases0"][0] == "sim_garbage_graph_ok"
    assert verdicts["cases1"] == ("not_run", "golden"), report.cases[2].verdict_reason


def test_a_task_short_of_memory_for_graph_verify_is_told_to_raise_memory_not_to_find_an_npu():
    """issue 35: graph verify that only needed more --memory is no reason to send a task to an NPU."""
    from runtime.judge.kernelbench import gym_verdict
    from runtime.judge.reruns import memory_of_graph_verify
    from runtime.report import CaseResult

    def plain() -> CaseResult:
        return CaseResult(operator="ReLU", case="level1", verdict="sim_output_unwritten")

    failed = CaseResult(operator="ReLU", case="level1", verdict="resource_limit",
                        verdict_reason="the job hit its memory limit (1.50 GiB)")
    _, _, reason = gym_verdict(memory_of_graph_verify(plain(), failed), {})
    assert "--memory" in reason and "NPU" not in reason.replace("no NPU needed", "")
    assert "judge it on an NPU" in gym_verdict(plain(), {})[2]  # no graph evidence for another reason
