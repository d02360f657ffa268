"""A script assert with the kernel's output on the `desired` side (`assert_allclose(golden, out)`) is judged on the
graph like one with it first (runtime/evidence/instrument.py, docs/realops.md §9). Our own model-style test."""
from __future__ import annotations

import pytest

from runtime import exit_codes
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

# Model-test style: tensors on `npu:N` (the stand-in's CPU in SIM), the golden first, both sides as lists.
GOLDEN_FIRST = '''
import os

import numpy as np
import pypto
import torch
import torch_npu  # noqa: F401
from numpy.testing import assert_allclose


@pypto.frontend.jit(runtime_options={{"run_mode": pypto.RunMode.NPU}})
def triple_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out.move(pypto.mul(x, 3.0))


def test_triple():
    card = int(os.environ.get("TILE_FWK_DEVICE_ID", 0))
    torch.npu.set_device(card)
    x = torch.rand(16, 32, device=f"npu:{{card}}")
    reference = x * {factor} + 2e-7  # within the tolerance, never bit-equal to the output
    result = torch.zeros(16, 32, device=f"npu:{{card}}")
    triple_kernel(x, result)
    assert_allclose(np.array(reference.cpu().flatten().tolist()), np.array(result.cpu().flatten().tolist()),
                    rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    test_triple()
'''


def run(tmp_path, calculator_cache, factor: float):
    script = tmp_path / "triple_model.py"
    script.write_text(GOLDEN_FIRST.format(factor=factor))
    report = run_submission(script, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"))
    return report, report.cases[0]


def test_the_kernels_output_second_is_graph_evidence_not_a_fake_pass(calculator_cache, tmp_path):
    report, case = run(tmp_path, calculator_cache, 3.0)
    assert case.verdict == "sim_garbage_graph_ok", (case.verdict, case.verdict_reason, case.graph_verify)
    assert case.graph_verify["status"] == "pass"
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


def test_a_wrong_kernel_with_its_output_second_fails_on_the_graph(calculator_cache, tmp_path):
    report, case = run(tmp_path, calculator_cache, 2.0)
    assert case.verdict == "graph_fail", (case.verdict, case.verdict_reason, case.graph_verify)
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.KERNEL_DEFECT
