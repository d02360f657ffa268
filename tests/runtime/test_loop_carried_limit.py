"""A kernel whose only fault is pypto's calculator: a loop-carried local tensor reshaped inside its loop.

Our own script in the style of pypto's deepseek sparse flash-attention model script: each loop iteration
writes one block of a local buffer made before the loop and hands the whole buffer to the output through an
in-place reshape, and the script compares in SIM too with a count-based helper beside it. The calculator does
not carry the buffer across iterations (docs/pypto.md §3), so only the last block survives and the compare
fails on graph values although the kernel's maths is right: the case keeps its SIM verdict, names the rule
and never exits 1. The same kernel with the reshape after the loop keeps its graph evidence
(docs/realops.md §9).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.evidence import loop_carried
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

CHECK = '''
from numpy.testing import assert_allclose


def compare_allclose(out, ref, atol, rtol):
    assert_allclose(out.numpy(), ref.numpy(), rtol=rtol, atol=atol)


def compare(out, ref, atol, rtol, max_error_ratio=0.005):
    """Counts the elements off, as the deepseek scripts' utils/compare.py does: no assert the harness reads."""
    bad = int(((out - ref).abs() > atol + rtol * ref.abs()).sum())
    limit = round(max_error_ratio * ref.numel())
    assert bad <= limit, f"compare fail: {bad} of {ref.numel()} elements off (limit {limit})"
'''

SCRIPT = '''
import sys

import pypto
import torch

from check import {compare}

HEADS, ROWS, DIM = 4, 16, 32
INSIDE = {inside}
RESHAPE_INPUT = {reshape_input}


@pypto.frontend.jit(runtime_options={{"run_mode": pypto.RunMode.SIM}})
def scale_heads(x: pypto.Tensor([HEADS * ROWS, DIM], pypto.DT_FP32), out: pypto.Tensor([HEADS, ROWS, DIM], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out_2d = pypto.tensor([HEADS * ROWS, DIM], pypto.DT_FP32, "out_2d")
    for head in pypto.loop(0, HEADS, 1, name="LOOP_HEAD", idx_name="head"):
        source = x
        if RESHAPE_INPUT:  # the kernel's input, only read in the loop: no carried state
            source = pypto.reshape(x, [HEADS * ROWS, DIM])
        rows = pypto.view(source, [ROWS, DIM], [head * ROWS, 0])
        pypto.assemble(pypto.mul(rows, 0.5), [head * ROWS, 0], out_2d)
        if INSIDE:
            out[:] = pypto.reshape(out_2d, [HEADS, ROWS, DIM], inplace=True)
    if not INSIDE:
        out[:] = pypto.reshape(out_2d, [HEADS, ROWS, DIM], inplace=True)


def case_heads():
    torch.manual_seed(5)
    x = torch.rand(HEADS * ROWS, DIM) + 1
    out = torch.zeros(HEADS, ROWS, DIM)
    scale_heads(x, out)
    {compare}(out, (x * 0.5).view(HEADS, ROWS, DIM), atol=1e-4, rtol=5e-3)


if __name__ == "__main__":
    if "--list" in sys.argv:
        print("  heads::case_heads: one block per head, handed out through an in-place reshape")
    else:
        case_heads()
'''


def run(tmp_path: Path, cache: Path, name: str, inside: bool, compare: str = "compare", reshape_input: bool = False):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "check.py").write_text(CHECK)
    script = folder / "heads.py"
    script.write_text(SCRIPT.format(inside=inside, compare=compare, reshape_input=reshape_input))
    report = run_submission(script, RunOptions(cache_dir=cache, work_dir=tmp_path / f"w_{name}"))
    (case,) = report.cases
    return exit_codes.of_cases(report.cases, "sim"), case


def test_a_compare_failing_only_on_the_calculators_carried_buffer_is_set_aside(calculator_cache, tmp_path):
    # Without the rule this is structural_error, exit 1: the count compare fails on the calculator's zero blocks.
    code, case = run(tmp_path, calculator_cache, "inside", True)
    assert case.verdict == "sim_output_unwritten", (case.verdict_reason, case.graph_verify)
    gv = case.graph_verify
    assert gv["status"] == "unsupported" and gv["rule"] == loop_carried.RULE, gv
    (note,) = gv["loop_reshapes"]
    assert note["kernel"] == "scale_heads" and note["where"] == "heads.py:25", note
    assert note["tensor"] == "out_2d" and note["shape"] == [64, 32], note
    assert "check.py:" in gv["set_aside"]["reason"], gv  # the helper's assert raised on the graph values
    assert loop_carried.RULE in case.verdict_reason
    assert code == exit_codes.OK


def test_the_same_reshape_after_the_loop_keeps_graph_evidence(calculator_cache, tmp_path):
    # An assert the harness reads, so the graph's (right) values make the verdict.
    code, case = run(tmp_path, calculator_cache, "after", False, "compare_allclose")
    assert case.verdict == "sim_garbage_graph_ok", (case.verdict_reason, case.graph_verify)
    assert "rule" not in case.graph_verify, case.graph_verify
    assert code == exit_codes.OK


def test_a_kernel_input_reshaped_inside_the_loop_keeps_graph_evidence(calculator_cache, tmp_path):
    # glm_attention's shape (docs/realops.md §9): an input reshaped in a loop that never writes it.
    code, case = run(tmp_path, calculator_cache, "input", False, "compare_allclose", reshape_input=True)
    assert case.verdict == "sim_garbage_graph_ok", (case.verdict_reason, case.graph_verify)
    assert "rule" not in case.graph_verify, case.graph_verify
    assert code == exit_codes.OK
