"""A bf16 script whose NPU-only compare is tighter than bf16: the emulated branch must not call it a defect.

The kernel spells silu out in bf16 ops; its golden computes silu in fp32 and rounds once. The calculator rounds
each op to bf16, so the two differ by about one bf16 ulp: inconclusive, not graph_fail (docs/realops.md §9).
A kernel with wrong maths in the same script stays graph_fail. Our own script, in the examples' style.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

SCRIPT = '''
import argparse
import sys

import pypto
import torch
from numpy.testing import assert_allclose

NPU = "--run_mode" in sys.argv and sys.argv[sys.argv.index("--run_mode") + 1] == "npu"
MODE = pypto.RunMode.NPU if NPU else pypto.RunMode.SIM
SLOPE = {slope}


@pypto.frontend.jit(runtime_options={{"run_mode": MODE}})
def mlp_kernel(x: pypto.Tensor([], pypto.DT_BF16), w1: pypto.Tensor([], pypto.DT_BF16),
               w2: pypto.Tensor([], pypto.DT_BF16), out: pypto.Tensor([], pypto.DT_BF16)):
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
    pypto.set_vec_tile_shapes(16, 64)
    a = pypto.matmul(x, w1, pypto.DT_BF16)
    act = pypto.div(a, pypto.add(pypto.exp(pypto.mul(a, -SLOPE)), 1.0))
    out.move(pypto.matmul(act, w2, pypto.DT_BF16))


def case_mlp():
    torch.manual_seed(7)
    dev = "npu:0" if NPU else "cpu"
    x = torch.randn(16, 256, dtype=torch.bfloat16, device=dev) / 4
    w1 = torch.randn(256, 256, dtype=torch.bfloat16, device=dev) / 4
    w2 = torch.randn(256, 64, dtype=torch.bfloat16, device=dev) / 4
    out = torch.empty(16, 64, dtype=torch.bfloat16, device=dev)
    mlp_kernel(x, w1, w2, out)
    a = (x @ w1).float()
    golden = (a * torch.sigmoid(a)).to(torch.bfloat16) @ w2
    if NPU:
        assert_allclose(out.cpu().float(), golden.cpu().float(), rtol=3e-3, atol=3e-3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run_mode", default="npu", choices=["npu", "sim"])
    args = parser.parse_args()
    if args.list:
        print("  mlp::case_mlp: silu MLP in bf16")
        return
    if NPU:
        import torch_npu  # noqa: F401
        torch.npu.set_device(0)
    case_mlp()


if __name__ == "__main__":
    main()
'''


def run(tmp_path: Path, slope: float, cache: Path):
    script = tmp_path / f"mlp_{int(slope * 10)}.py"
    script.write_text(SCRIPT.format(slope=slope))
    report = run_submission(script, RunOptions(cache_dir=cache, work_dir=tmp_path / f"w{int(slope * 10)}"))
    (case,) = report.cases
    return report, case


def test_a_bf16_compare_failing_by_rounding_alone_is_inconclusive(calculator_cache, tmp_path):
    report, case = run(tmp_path, 1.0, calculator_cache)
    assert case.verdict == "sim_output_unwritten", (case.verdict_reason, case.error)
    why = case.graph_verify["emulated_npu_branch"]
    assert why["status"] == "inconclusive" and why["verdict"] == "graph_fail", why
    (judged,) = why["rounding"]["asserts"]
    assert judged["dtype"] == "bfloat16" and 0 < judged["max_abs_diff"] <= 2 * judged["ulp"]
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


def test_a_bf16_kernel_with_wrong_maths_is_still_a_graph_fail(calculator_cache, tmp_path):
    # sigmoid(2a) in place of sigmoid(a): far beyond bf16 rounding.
    report, case = run(tmp_path, 2.0, calculator_cache)
    assert case.verdict == "graph_fail", (case.verdict_reason, case.graph_verify)
    assert case.graph_verify["source"] == "emulated_npu_branch"
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.KERNEL_DEFECT
