"""A kernel whose only fault is pypto's calculator: a dtype view of a tensor partially valid in its last dim.

Our own script in the style of pypto's deepseek sparse-attention model scripts: int8 rows with their fp32 scale
packed behind them, the scale bytes viewed with a partial valid shape and reinterpreted as fp32, the compare
helper in a module beside the script. The calculator zeroes the rows of that view past its first valid bytes
(docs/pypto.md §3), so the script's compare fails on graph values although the kernel's maths is right: the case
keeps its SIM verdict, names the rule, and never exits 1. The same kernel with the scale bytes fully valid keeps
its graph evidence (docs/realops.md §9).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.evidence import dtype_views
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

CHECK = '''
import torch
from numpy.testing import assert_allclose


def compare(out, ref, atol, rtol, max_error_ratio=0.005):
    """Counts the elements off, as the deepseek scripts' utils/compare.py does: no assert the harness reads."""
    bad = int(((out - ref).abs() > atol + rtol * ref.abs()).sum())
    limit = round(max_error_ratio * ref.numel())
    assert bad <= limit, f"compare fail: {bad} of {ref.numel()} elements off (limit {limit})"


def compare_allclose(out, ref, atol, rtol):
    assert_allclose(out.numpy(), ref.numpy(), rtol=rtol, atol=atol)
'''

SCRIPT = '''
import argparse
import sys

import pypto
import torch

from check import {compare}

NPU = "--run_mode" in sys.argv and sys.argv[sys.argv.index("--run_mode") + 1] == "npu"
MODE = pypto.RunMode.NPU if NPU else pypto.RunMode.SIM
ROWS, QUANT = 32, 32  # a cache row: 32 int8 values, 4 fp32 scales (16 bytes), 16 bytes of padding
SCALE_VALID = {scale_valid}  # how many of the 32 scale-and-padding bytes the view declares valid


@pypto.frontend.jit(runtime_options={{"run_mode": MODE}})
def dequant_kernel(cache: pypto.Tensor([ROWS, 64], pypto.DT_INT8), out: pypto.Tensor([ROWS, QUANT], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    q8 = pypto.view(cache, [ROWS, QUANT], [0, 0])
    q = pypto.cast(pypto.cast(q8, pypto.DT_FP16), pypto.DT_FP32)
    scale_bytes = pypto.view(cache, [ROWS, 32], [0, QUANT], valid_shape=[ROWS, SCALE_VALID])
    scales = pypto.view(scale_bytes, dtype=pypto.DT_FP32)
    first = pypto.view(pypto.add(scales, 0), [ROWS, 1], [0, 0])
    pypto.assemble(pypto.mul(q, first), [0, 0], out)


def pack(seed=3):
    torch.manual_seed(seed)
    q = torch.randint(-127, 128, (ROWS, QUANT), dtype=torch.int8)
    scale = torch.rand(ROWS, 4) / 64 + 1e-3
    cache = torch.zeros(ROWS, 64, dtype=torch.int8)
    cache[:, :QUANT] = q
    cache[:, QUANT:QUANT + 16] = scale.view(torch.int8)
    return cache, q.float() * scale[:, :1]


def case_dequant():
    dev = "npu:0" if NPU else "cpu"
    cache, golden = pack()
    out = torch.zeros(ROWS, QUANT, device=dev)
    dequant_kernel(cache.to(dev), out)
    if NPU or {always}:
        {compare}(out.cpu(), golden, atol=1e-4, rtol=5e-3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--run_mode", default="npu", choices=["npu", "sim"])
    args = parser.parse_args()
    if args.list:
        print("  quant::case_dequant: int8 rows with their fp32 scale packed behind them")
        return
    if NPU:
        import torch_npu  # noqa: F401
        torch.npu.set_device(0)
    case_dequant()


if __name__ == "__main__":
    main()
'''


def run(tmp_path: Path, cache: Path, name: str, scale_valid: int, compare: str, always: bool = False):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "check.py").write_text(CHECK)
    script = folder / "dequant.py"
    script.write_text(SCRIPT.format(scale_valid=scale_valid, compare=compare, always=always))
    report = run_submission(script, RunOptions(cache_dir=cache, work_dir=tmp_path / f"w_{name}"))
    (case,) = report.cases
    return exit_codes.of_cases(report.cases, "sim"), case


def assert_set_aside(limit: dict) -> None:
    assert limit["status"] == "unsupported" and limit["rule"] == dtype_views.RULE, limit
    (view,) = limit["dtype_views"]
    assert view["kernel"] == "dequant_kernel" and view["where"] == "dequant.py:22", view
    assert view["shape"] == [32, 32] and view["valid_shape"] == [32, 16], view
    assert (view["from_dtype"], view["to_dtype"]) == ("DT_INT8", "DT_FP32")


def test_a_read_compare_failing_only_on_the_calculators_view_is_set_aside(calculator_cache, tmp_path):
    # Without the rule this is graph_fail, exit 1: the assert_allclose fails on the calculator's zeroed rows.
    code, case = run(tmp_path, calculator_cache, "partial_allclose", 16, "compare_allclose")
    assert case.verdict == "sim_output_unwritten", (case.verdict_reason, case.graph_verify)
    limit = case.graph_verify["emulated_npu_branch"]
    assert_set_aside(limit)
    assert limit["verdict"] == "sim_output_unwritten" and limit["set_aside"]["status"] == "fail", limit
    assert code == exit_codes.OK


def test_a_count_compare_in_a_helper_module_is_set_aside_too(calculator_cache, tmp_path):
    code, case = run(tmp_path, calculator_cache, "partial_count", 16, "compare")
    assert case.verdict == "sim_output_unwritten", (case.verdict_reason, case.graph_verify)
    limit = case.graph_verify["emulated_npu_branch"]
    assert_set_aside(limit)
    assert "check.py:" in limit["set_aside"]["reason"], limit  # the helper's assert raised on the graph values
    assert code == exit_codes.OK


def test_a_script_that_compares_in_sim_too_is_not_a_structural_error(calculator_cache, tmp_path):
    # The deepseek scripts' path: the SIM run's outputs already hold the graph's values and the count compare
    # fails; without the rule the case is structural_error, exit 1.
    code, case = run(tmp_path, calculator_cache, "partial_always", 16, "compare", always=True)
    assert case.verdict == "sim_output_unwritten", (case.verdict_reason, case.graph_verify)
    assert_set_aside(case.graph_verify)
    assert dtype_views.RULE in case.verdict_reason
    assert code == exit_codes.OK


def test_the_same_kernel_with_its_scale_bytes_fully_valid_keeps_graph_evidence(calculator_cache, tmp_path):
    code, case = run(tmp_path, calculator_cache, "full_allclose", 32, "compare_allclose")
    assert case.verdict == "sim_garbage_graph_ok", (case.verdict_reason, case.graph_verify)
    assert case.graph_verify["source"] == "emulated_npu_branch" and "rule" not in case.graph_verify
    assert code == exit_codes.OK
