"""`torch.allclose` / `numpy.allclose` on a kernel's output: the compare returns its answer instead of
raising, asserted (`assert torch.allclose(...)`) or only computed (pypto's attention example calls it and
prints a max |diff|). In the emulated NPU branch its answer on the tensor graph's CPU result is graph
evidence (docs/realops.md §9). Our own script, in that style."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.runner import RunOptions, run_submission
from tests.runtime.npu_first_script import MAIN

pytestmark = pytest.mark.slow  # runs real pypto compiles

SCRIPT = '''
import argparse
import os

import numpy as np
import pypto
import torch

MODE = pypto.RunMode.NPU if "--run_mode" in os.sys.argv and \\
    os.sys.argv[os.sys.argv.index("--run_mode") + 1] == "npu" else pypto.RunMode.SIM


@pypto.frontend.jit(runtime_options={{"run_mode": MODE}})
def shift_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out.move(pypto.add(x, 1.0))


def case_unasserted(device):
    x = torch.rand(16, 32, device=device)
    out = torch.empty_like(x)
    shift_kernel(x, out)
    golden = x + {shift}
    if MODE == pypto.RunMode.NPU:
        print(f"  Max difference: {{(out - golden).abs().max().item():.6f}}")
        torch.allclose(out, golden, rtol=3e-3, atol=3e-3)


def case_asserted_numpy(device):
    x = torch.rand(16, 32, device=device)
    out = torch.empty_like(x)
    shift_kernel(x, out)
    golden = (x + {shift}).cpu().numpy()
    if MODE == pypto.RunMode.NPU:
        assert np.allclose(golden, out.cpu().numpy(), rtol=1e-4, atol=1e-4), "mismatch"


def case_goldens_only(device):
    x = torch.rand(16, 32, device=device)
    out = torch.empty_like(x)
    shift_kernel(x, out)
    if MODE == pypto.RunMode.NPU:
        assert torch.allclose(x * 3.0, 3.0 * x)


CASES = {{"shift::unasserted": case_unasserted, "shift::asserted_numpy": case_asserted_numpy,
          "shift::goldens_only": case_goldens_only}}

''' + MAIN


def write(folder: Path, shift: float) -> Path:
    folder.mkdir()
    script = folder / "allclose_example.py"
    script.write_text(SCRIPT.format(shift=shift))
    return script


def test_allclose_on_a_kernel_output_is_graph_evidence(calculator_cache, tmp_path):
    report = run_submission(write(tmp_path / "ok", 1.0), RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"))
    cases = {c.case: c for c in report.cases}
    for name, api in (("shift::unasserted", "torch.allclose"), ("shift::asserted_numpy", "numpy.allclose")):
        case = cases[name]
        assert case.verdict == "sim_garbage_graph_ok", (name, case.verdict_reason, case.graph_verify, case.error)
        gv = case.graph_verify
        assert gv["source"] == "emulated_npu_branch" and gv["status"] == "pass" and gv["asserts_judged"] == 1
        assert gv["asserts"][0]["api"] == api and gv["asserts"][0]["kernel"] == "shift_kernel"
    golden = cases["shift::goldens_only"]  # two goldens compared: no claim about the kernel
    assert golden.verdict == "sim_output_unwritten" and golden.graph_verify["status"] == "no_compare"
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


def test_a_wrong_kernel_is_caught_by_an_allclose_the_script_never_asserted(calculator_cache, tmp_path):
    report = run_submission(write(tmp_path / "wrong", 2.0), RunOptions(
        cache_dir=calculator_cache, work_dir=tmp_path / "w", cases=["shift::unasserted", "shift::asserted_numpy"]))
    cases = {c.case: c for c in report.cases}
    unasserted = cases["shift::unasserted"]
    assert unasserted.verdict == "graph_fail", (unasserted.verdict_reason, unasserted.graph_verify)
    gv = unasserted.graph_verify
    assert gv["source"] == "emulated_npu_branch" and gv["asserts_failed"] == 1
    assert "torch.allclose(rtol=0.003, atol=0.003) returned False on shift_kernel's output" in gv["reason"]
    assert 0.99 <= gv["metrics"]["max_abs_diff"] <= 1.01  # |(x + 1) - (x + 2)|
    asserted = cases["shift::asserted_numpy"]
    assert asserted.verdict == "graph_fail" and "mismatch" in asserted.error.message
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.KERNEL_DEFECT

