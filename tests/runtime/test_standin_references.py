"""The torch_npu stand-in's CPU references of fused ops (docs/realops.md §12), each against its documented
definition worked by hand on small tensors, and their use through the stand-in."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "runtime/devices/standin/site/torch_npu"


def _load() -> ModuleType:
    """The references alone: importing the stand-in itself would change torch for this whole process."""
    spec = importlib.util.spec_from_file_location("standin_references", SITE / "_references.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load()


def test_rms_norm_returns_y_in_the_input_dtype_and_rstd_in_float32_over_gammas_dims():
    x = torch.tensor([[3.0, 4.0], [1.0, -1.0]], dtype=torch.float16)
    gamma = torch.tensor([1.0, 2.0], dtype=torch.float16)
    y, rstd = ref.npu_rms_norm(x, gamma, epsilon=1e-6)
    r0, r1 = 1 / math.sqrt((9 + 16) / 2 + 1e-6), 1 / math.sqrt(1 + 1e-6)
    assert (y.dtype, rstd.dtype, tuple(rstd.shape)) == (torch.float16, torch.float32, (2, 1))
    assert torch.allclose(rstd, torch.tensor([[r0], [r1]]))
    assert torch.equal(y, torch.tensor([[3 * r0, 8 * r0], [r1, -2 * r1]]).half())
    # gamma of two dims: the rms is taken over both, rstd keeps them as 1
    _, rstd3 = ref.npu_rms_norm(torch.ones(2, 3, 4), torch.ones(3, 4))
    assert tuple(rstd3.shape) == (2, 1, 1)


def test_add_rms_norm_returns_the_norm_of_the_sum_its_rstd_and_the_sum():
    x1 = torch.tensor([[1.0, 2.0]], dtype=torch.bfloat16)
    x2 = torch.tensor([[2.0, 2.0]], dtype=torch.bfloat16)
    y, rstd, x = ref.npu_add_rms_norm(x1, x2, torch.tensor([1.0, 1.0], dtype=torch.bfloat16))
    r = 1 / math.sqrt((9 + 16) / 2 + 1e-6)
    assert torch.equal(x, torch.tensor([[3.0, 4.0]], dtype=torch.bfloat16))
    assert (y.dtype, rstd.dtype) == (torch.bfloat16, torch.float32)
    assert torch.equal(y, torch.tensor([[3 * r, 4 * r]]).bfloat16())


@pytest.mark.parametrize("mode, expected", [
    ("half", [1 - 3, 2 - 4, 3 + 1, 4 + 2]),  # rotate = (-x2, x1) of the two halves
    ("interleave", [1 - 2, 2 + 1, 3 - 4, 4 + 3]),  # rotate = (-x[1], x[0], -x[3], x[2])
])
def test_rotary_mul_is_x_times_r1_plus_rotated_x_times_r2(mode, expected):
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float16)
    out = ref.npu_rotary_mul(x, torch.ones(1, 4, dtype=torch.float16), torch.ones(1, 4, dtype=torch.float16),
                             rotary_mode=mode)
    assert out.dtype == torch.float16 and out.tolist() == [expected]
    scaled = ref.npu_rotary_mul(x, torch.full((1, 4), 2.0), torch.zeros(1, 4), rotary_mode=mode)
    assert scaled.tolist() == [[2.0, 4.0, 6.0, 8.0]]


def test_swiglu_is_swish_of_the_first_half_times_the_second():
    x = torch.tensor([[1.0, -2.0, 3.0, 0.5]])
    a, b = [1.0, -2.0], [3.0, 0.5]
    expected = [a[i] / (1 + math.exp(-a[i])) * b[i] for i in range(2)]
    assert torch.allclose(ref.npu_swiglu(x), torch.tensor([expected]))
    assert tuple(ref.npu_swiglu(torch.ones(4, 6), dim=0).shape) == (2, 6)


def test_dynamic_quant_scales_each_row_by_its_max_over_127():
    x = torch.tensor([[1.0, -4.0, 3.0], [0.5, 0.25, -0.125]], dtype=torch.float16)
    y, scale = ref.npu_dynamic_quant(x)
    assert (y.dtype, scale.dtype, tuple(scale.shape)) == (torch.int8, torch.float32, (2,))
    assert torch.allclose(scale, torch.tensor([4 / 127, 0.5 / 127]))
    assert y.tolist() == [[32, -127, 95], [127, 64, -32]]  # 31.75, 95.25, 63.5 (ties to even), -31.75
    smooth = torch.tensor([2.0, 1.0, 1.0], dtype=torch.float16)
    y2, scale2 = ref.npu_dynamic_quant(x, smooth_scales=smooth)
    assert torch.allclose(scale2[:1], torch.tensor([4 / 127])) and y2[0].tolist() == [64, -127, 95]


@pytest.mark.parametrize("div_mode, expected", [
    (True, [[3, 1], [7, 2]]),  # 1/0.5+1, 2/2+0, 3/0.5+1, 4/2+0
    (False, [[2, 4], [2, 8]]),  # 1*0.5+1 = 1.5 and 3*0.5+1 = 2.5 round to even, 2*2, 4*2
])
def test_quantize_divides_or_multiplies_per_channel_then_adds_the_zero_point(div_mode, expected):
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = ref.npu_quantize(x, torch.tensor([0.5, 2.0]), torch.tensor([1.0, 0.0]), torch.qint8, -1, div_mode)
    assert out.dtype == torch.int8 and out.tolist() == expected
    big = ref.npu_quantize(torch.tensor([[1000.0, -1000.0]]), torch.tensor([1.0]), None, torch.qint8, -1)
    assert big.tolist() == [[127, -128]]  # saturated


def test_quant_matmul_accumulates_exactly_then_scales_per_column_and_per_token():
    a = torch.tensor([[1, 2], [3, 4]], dtype=torch.int8)
    b = torch.tensor([[1, 0], [0, -1]], dtype=torch.int8)
    bias = torch.tensor([1, 1], dtype=torch.int32)
    # a @ b = [[1, -2], [3, -4]]; + bias = [[2, -1], [4, -3]]
    assert ref.npu_quant_matmul(a, b, torch.ones(2), bias=bias, output_dtype=torch.int32).tolist() == [[2, -1], [4, -3]]
    out = ref.npu_quant_matmul(a, b, torch.tensor([0.5, 2.0]), pertoken_scale=torch.tensor([1.0, 10.0]), bias=bias,
                               output_dtype=torch.bfloat16)
    assert out.dtype == torch.bfloat16 and out.tolist() == [[1.0, -2.0], [20.0, -60.0]]
    big = torch.full((1, 64), 127, dtype=torch.int8)  # 64 * 127 * 127 is exact, then scaled and saturated
    wide = ref.npu_quant_matmul(big, big.T.contiguous(), torch.tensor([1e-3]), offset=torch.tensor([1.0]))
    assert wide.dtype == torch.int8 and wide.tolist() == [[127]]


@pytest.mark.parametrize("call, named", [
    (lambda: ref.npu_dynamic_quant(torch.ones(2, 2), dst_type=torch.float8_e4m3fn), "dst_type"),
    (lambda: ref.npu_quant_matmul(torch.ones(2, 2, dtype=torch.int8), torch.ones(2, 2, dtype=torch.int8),
                                  torch.ones(2), x1_dtype=torch.float8_e4m3fn), "x1_dtype"),
    (lambda: ref.npu_rotary_mul(torch.ones(4), torch.ones(4), torch.ones(4), rotary_mode="quarter"), "quarter"),
])
def test_an_argument_the_reference_does_not_cover_is_refused_by_name(call, named):
    with pytest.raises(ref.ArgumentNeedsNpu, match=named):
        call()


def test_the_standin_serves_the_references_records_them_and_refuses_the_rest_as_simgap():
    code = textwrap.dedent("""
        from runtime.devices import standin
        from runtime.judge import simgap
        standin.offer()
        import torch, torch_npu
        from torch_npu import npu_rms_norm
        y, rstd = npu_rms_norm(torch.ones(2, 4, device="npu:0"), torch.ones(4))
        torch_npu.npu_rms_norm(torch.ones(2, 4), torch.ones(4))
        print(y.tolist()[0][0] > 0.99, standin.references_used())
        try:
            torch_npu.npu_dynamic_quant(torch.ones(2, 2), dst_type=torch.float8_e4m3fn)
        except torch_npu.NeedsRealNpu as exc:
            print(type(exc).__name__, simgap.detect(str(exc)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().splitlines()
    assert first == "True ['torch_npu.npu_rms_norm']"
    assert second == ("NeedsRealNpu the test calls torch_npu.npu_dynamic_quant(), which only a real NPU can run")


GOLDEN = '''
import torch
import torch_npu


def row_rms_golden(x, gamma):
    """The model's RMSNorm as its goldens spell it: torch_npu's fused op (y, rstd), y kept."""
    return torch_npu.npu_rms_norm(x, gamma, epsilon=1e-6)[0]
'''

IMPL = '''
import pypto
import torch

ROW_TILE = 8


@pypto.frontend.jit
def row_rms_kernel(x: pypto.Tensor([], pypto.DT_FP16), gamma: pypto.Tensor([], pypto.DT_FP16),
                   out: pypto.Tensor([], pypto.DT_FP16)):
    hidden = x.shape[2]
    pypto.set_vec_tile_shapes(1, ROW_TILE, hidden)
    for i in pypto.loop(x.shape[1] // ROW_TILE, name="ROWS", idx_name="i"):
        rows = pypto.cast(pypto.view(x, [1, ROW_TILE, hidden], [0, i * ROW_TILE, 0]), pypto.DT_FP32)
        mean_sq = pypto.sum(rows * rows, dim=-1, keepdim=True) / float(hidden)
        y = rows / pypto.sqrt(mean_sq + 1e-6) * pypto.cast(gamma, pypto.DT_FP32){wrong}
        pypto.assemble(pypto.cast(y, pypto.DT_FP16), [0, i * ROW_TILE, 0], out)


def row_rms_wrapper(x, gamma):
    out = torch.empty_like(x)
    row_rms_kernel(x, gamma, out)
    return out
'''

CASES = '''{"op_name": "row_rms", "test_cases": [{"id": "rows_16x256", "seed": 5,
  "inputs": [{"name": "x", "shape": [1, 16, 256], "dtype": "float16", "init": "randn"},
             {"name": "gamma", "shape": [256], "dtype": "float16", "init": "randn"}],
  "output": {"shape": [1, 16, 256], "dtype": "float16"}, "rtol": 1e-2, "atol": 1e-2}]}'''


@pytest.mark.slow  # a real pypto compile
@pytest.mark.parametrize("wrong, verdict", [("", "sim_garbage_graph_ok"), (" * 1.5", "graph_fail")])
def test_a_golden_calling_npu_rms_norm_gets_graph_evidence_and_says_so(warm_sim, calculator_cache, tmp_path,
                                                                        wrong, verdict):
    from rich.console import Console

    from runtime.cli.console import print_report
    from runtime.runner import RunOptions, run_submission

    pkg = tmp_path / "row_rms"
    pkg.mkdir()
    (pkg / "row_rms_golden.py").write_text(GOLDEN)
    (pkg / "row_rms_impl.py").write_text(IMPL.replace("{wrong}", wrong))
    (pkg / "test_cases.json").write_text(CASES)
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert case.verdict == verdict, case.verdict_reason  # not sim_unsupported: the golden ran on the CPU
    assert case.graph_verify["status"] == ("pass" if not wrong else "fail")
    assert case.cpu_references == ["torch_npu.npu_rms_norm"]
    console = Console(width=120, record=True, force_terminal=False)
    print_report(report, console)
    assert "golden via CPU reference of torch_npu.npu_rms_norm (rows_16x256)" in console.export_text()
