"""`suspect_fake_pass` only on evidence of a cheat (issue 31, docs/realops.md §11).

Stale memory an honest kernel's unwritten output got from the allocator, and compares that cannot tell a
correct kernel from garbage, are no evidence; a cheat whose kernel failed still is. Each runs our own small
kernels through the real runtime (SIM, graph verify off: what SIM alone leaves in the outputs is the point).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import exit_codes, verdicts
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

KERNEL = '''
import sys
import pypto
import torch
import torch_npu  # the SIM stand-in: .npu() is a copy, as a host-to-device copy is
from numpy.testing import assert_allclose

MODE = pypto.RunMode.SIM if "sim" in sys.argv else pypto.RunMode.NPU


@pypto.frontend.jit(runtime_options={"run_mode": MODE})
def add_one(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x + 1.0


@pypto.frontend.jit(runtime_options={"run_mode": MODE})
def add_one_untiled(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    out[:] = x + 1.0  # no vec tile shapes: the launch fails
'''

# The gym's flow (golden on the CPU, then `.npu()`, which frees the CPU result; then the wrapper's empty_like).
# The allocator hands the freed block back in about one try of five (measured, docs/realops.md §11); the loop
# keeps trying so that, without the poison, the honest kernel's unwritten output holds the golden every run.
STALE = KERNEL + '''

if __name__ == "__main__":
    x = torch.randn(16, 32).npu()
    for _ in range(500):
        golden = (x.cpu() + 1.0).npu()
        out = torch.empty_like(x)
        if torch.equal(out, golden):
            break
    add_one(x, out)
    assert_allclose(out.cpu().numpy(), golden.cpu().numpy(), rtol=1e-3, atol=1e-3)
    print("[PRECISION_PASS]")
'''

# The guide's own fake pass: the kernel fails, the script catches it and returns the golden.
FALLBACK = KERNEL + '''

def wrapper(x):
    out = torch.empty_like(x)
    try:
        add_one_untiled(x, out)
    except Exception:
        return torch.add(x, 1.0)  # the golden, in torch
    return out


if __name__ == "__main__":
    x = torch.randn(16, 32)
    got = wrapper(x)
    assert_allclose(got.numpy(), (x + 1.0).numpy(), rtol=1e-3, atol=1e-3)
    print("[PRECISION_PASS] max_diff 0.0")
'''


def _run(path: Path, warm, tmp_path: Path):
    return run_submission(path, RunOptions(graph_verify=False, work_dir=tmp_path / "w"), warm=warm)


def test_an_unwritten_output_never_reads_as_the_golden(warm_sim, tmp_path):
    """Without the poison: suspect_fake_pass, exit 1, on an honest kernel. With it: SIM output unwritten."""
    path = tmp_path / "stale_block.py"
    path.write_text(STALE)
    report = _run(path, warm_sim, tmp_path)
    [case] = report.cases
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.verdict_reason, case.error)
    assert case.kernel_launches == 1
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


def test_a_failed_kernel_caught_to_return_the_golden_is_a_fake_pass(warm_sim, tmp_path):
    """Was `not_run`, exit 2: the launch failed, so no kernel counted, and that rule came first."""
    path = tmp_path / "fallback_script.py"
    path.write_text(FALLBACK)
    report = _run(path, warm_sim, tmp_path)
    [case] = report.cases
    assert case.verdict == verdicts.SUSPECT_FAKE_PASS, (case.verdict, case.verdict_reason)
    assert "no kernel launch completed" in case.verdict_reason
    assert case.launches and case.launches[0].error, case.launches
    assert "golden-fallback" in {f.rule for f in report.lint}
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.KERNEL_DEFECT


ZERO_IMPL = '''
import pypto
import torch


@pypto.frontend.jit
def clamp_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    out[:] = pypto.relu(x)


def clamp_wrapper(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(x)
    clamp_kernel(x, out)
    return out
'''
ZERO_GOLDEN = '''
import torch


def clamp_golden(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)
'''


def _zero_case_package(root: Path) -> Path:
    pkg = root / "clamp"
    pkg.mkdir()
    (pkg / "clamp_impl.py").write_text(ZERO_IMPL)
    (pkg / "clamp_golden.py").write_text(ZERO_GOLDEN)
    case = {"id": "clamp_zero_input", "seed": 1, "rtol": 1e-3, "atol": 1e-3,
            "input": {"shape": [32, 64], "dtype": "float32", "init": "zeros"},
            "output": {"shape": [32, 64], "dtype": "float32"}}
    (pkg / "test_cases.json").write_text(json.dumps({"op_name": "clamp", "test_cases": [case]}))
    return pkg


def test_an_all_zero_golden_is_inconclusive_not_a_cheat(warm_sim, tmp_path):
    """A zero-filled output SIM never wrote equals an all-zero golden: was suspect_fake_pass, exit 1."""
    report = _run(_zero_case_package(tmp_path), warm_sim, tmp_path)
    [case] = report.cases
    assert case.verdict == verdicts.INCONCLUSIVE, (case.verdict, case.verdict_reason, case.error)
    assert "all zero" in case.verdict_reason
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.OK


POISON_PROBE = '''
import torch
from runtime.job import poison
from runtime.devices import standin

poison.install()
standin.offer()
import torch_npu  # noqa: F401

x = torch.randn(4, 8)
found = {
    "empty": torch.empty(4, 8), "empty_like": torch.empty_like(x), "new_empty": x.new_empty((4, 8)),
    "empty_strided": torch.empty_strided((4, 8), (8, 1)), "empty on npu": torch.empty(4, 8, device="npu:0"),
    "fp16": torch.empty(5, dtype=torch.float16), "int32": torch.empty(5, dtype=torch.int32),
    "int8": torch.empty_like(x.to(torch.int8)),
}
for name, t in found.items():
    if t.is_floating_point():
        assert bool(torch.isnan(t).all()), name
    else:
        assert bool((t == torch.iinfo(t.dtype).max).all()), name
assert torch.equal(x.npu(), x) and torch.equal(x.to("npu"), x)  # a device copy is written in full
print("poisoned", len(found))
'''


def test_what_a_sim_job_allocates_uninitialised_is_poison():
    """NaN for floats, the largest value for integers, on the CPU and on the stand-in's `npu` device."""
    probe = subprocess.run([sys.executable, "-c", POISON_PROBE], capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0 and "poisoned 8" in probe.stdout, probe.stderr
