"""A bare `assert max_diff < tol` on a float read from a kernel's output (`.abs().max().item()`), as pypto's
activation/loop/layer_norm examples check: graph evidence in the emulated NPU branch (docs/realops.md §9).
Also an `assert_allclose` on an output whose values equal its input's (transform_ops.py's cast of [2., 3.]).
Our own scripts, in that style."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.runner import RunOptions, run_submission
from tests.runtime.npu_first_script import MAIN

pytestmark = pytest.mark.slow  # runs real pypto compiles

# An NPU-first script: max_diff is computed in both modes, the assert runs only on the NPU branch.
SCRIPT = '''
import argparse
import os

import numpy as np
import pypto
import torch
from numpy.testing import assert_allclose

MODE = pypto.RunMode.NPU if "--run_mode" in os.sys.argv and \\
    os.sys.argv[os.sys.argv.index("--run_mode") + 1] == "npu" else pypto.RunMode.SIM


@pypto.frontend.jit(runtime_options={{"run_mode": MODE}})
def double_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out.move(pypto.mul(x, 2.0))


def case_double(device):
    x = torch.rand(16, 32, device=device)
    out = torch.empty_like(x)
    double_kernel(x, out)
    expected = x * {factor}
    max_diff = (out - expected).abs().max().item()
    if MODE == pypto.RunMode.NPU:
        print(f"  Max difference: {{max_diff:.6f}}")
        assert max_diff < 1e-2, "Result mismatch!"


def case_golden_only(device):
    x = torch.rand(16, 32, device=device)
    out = torch.empty_like(x)
    double_kernel(x, out)
    expected = x * 2.0
    again = x + x
    if MODE == pypto.RunMode.NPU:
        if (out - expected).abs().max().item() < 0.5:  # not an assert: decides nothing
            print("  close")
        assert (again - expected).abs().max().item() < 1e-2, "golden mismatch"


def case_same_values(device):
    x = torch.zeros(16, 32, device=device)
    out = torch.full_like(x, 7.0)
    double_kernel(x, out)  # 2 * 0: the output's values are the input's
    if MODE == pypto.RunMode.NPU:
        assert_allclose(np.array(out.cpu()), np.array((x * 2.0).cpu()), rtol=1e-5, atol=1e-5)


CASES = {{"ops::case_double": case_double, "ops::case_golden_only": case_golden_only,
          "ops::case_same_values": case_same_values}}

''' + MAIN


def write(folder: Path, factor: float) -> Path:
    folder.mkdir()
    script = folder / "bare_compare_example.py"
    script.write_text(SCRIPT.format(factor=factor))
    return script


def test_a_bare_max_diff_assert_on_a_kernel_output_is_graph_evidence(calculator_cache, tmp_path):
    report = run_submission(write(tmp_path / "ok", 2.0), RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"))
    cases = {c.case: c for c in report.cases}
    double = cases["ops::case_double"]
    assert double.verdict == "sim_garbage_graph_ok", (double.verdict_reason, double.graph_verify, double.error)
    gv = double.graph_verify
    assert gv["source"] == "emulated_npu_branch" and gv["status"] == "pass" and gv["asserts_judged"] == 1
    judged = gv["asserts"][0]
    assert judged["kernel"] == "double_kernel" and judged["compare"].endswith("< 0.01")
    # The golden-against-golden assert and the `if` on the kernel's float claim nothing.
    golden = cases["ops::case_golden_only"]
    assert golden.verdict == "sim_output_unwritten" and golden.graph_verify["status"] == "no_compare"
    assert "compared no kernel output either" in golden.graph_verify["emulated_npu_branch"]["reason"]
    # Matched by value, the compare's array is both the unwritten input and the written output: the output.
    same = cases["ops::case_same_values"]
    assert same.verdict == "sim_garbage_graph_ok", (same.verdict_reason, same.graph_verify)
    assert same.graph_verify["asserts"][0]["kernel"] == "double_kernel"
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


def test_a_wrong_kernel_fails_its_bare_assert_on_the_graph(calculator_cache, tmp_path):
    report = run_submission(write(tmp_path / "wrong", 3.0),
                            RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w", cases=["ops::case_double"]))
    double = report.cases[0]
    assert double.verdict == "graph_fail", (double.verdict_reason, double.graph_verify)
    gv = double.graph_verify
    assert gv["source"] == "emulated_npu_branch" and gv["asserts_failed"] == 1
    assert "Result mismatch!" in double.error.message
    value = float(gv["asserts"][0]["compare"].split(" ")[0])
    assert 0.01 <= value <= 1.0  # |2x - 3x| = x, x in [0, 1)
    assert "failed on a float read from double_kernel's output" in gv["reason"]
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.KERNEL_DEFECT
