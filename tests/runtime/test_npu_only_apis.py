"""NPU-only torch APIs the CPU stand-in lacks (graph capture: `torch.npu.NPUGraph`) are SIM's limit, not a kernel
defect (runtime/devices/standin, runtime/judge/simgap.py, docs/realops.md §2 and §9). Our own scripts."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime import exit_codes
from runtime.judge import simgap
from runtime.runner import RunOptions, run_submission

REPO = Path(__file__).resolve().parents[2]


def in_fresh_python(code: str) -> subprocess.CompletedProcess[str]:
    """The stand-in changes torch for the whole process: try it in a process of its own."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)


def test_a_missing_npu_api_says_it_needs_a_real_npu_and_stays_missing_for_probes():
    proc = in_fresh_python("""
        from runtime.devices import standin
        standin.offer()
        import torch, torch_npu
        print(hasattr(torch.npu, "NPUGraph"), hasattr(torch_npu, "profiler"), hasattr(torch.npu, "_lazy_init"))
        for get in (lambda: torch.npu.NPUGraph, lambda: torch_npu.profiler, lambda: torch.npu._lazy_init):
            try:
                get()
            except AttributeError as exc:
                print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False False False"
    assert lines[1] == "torch.npu.NPUGraph needs a real NPU: the SIM stand-in for torch_npu does not offer it"
    assert lines[2].startswith("torch_npu.profiler needs a real NPU")
    assert "needs a real NPU" not in lines[3]  # private names: a plain AttributeError


def test_simgap_reads_both_refusals():
    assert simgap.detect("AttributeError: torch.npu.NPUGraph needs a real NPU: the SIM stand-in ...") == \
        "the test calls torch.npu.NPUGraph(), which only a real NPU can run"
    assert simgap.detect("torch_npu.npu_format_cast() needs a real NPU: ...") == \
        "the test calls torch_npu.npu_format_cast(), which only a real NPU can run"
    assert simgap.detect("AttributeError: module 'torch' has no attribute 'npu'") is None


# A test module in the style of NPU-first model tests: tensors on `npu:N`, the launch captured in an NPU graph.
GRAPH_CAPTURE = '''
import os

import pypto
import torch
import torch_npu  # noqa: F401
from numpy.testing import assert_allclose


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def halve_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out.move(pypto.mul(x, 0.5))


def test_halve_in_graph():
    card = int(os.environ.get("TILE_FWK_DEVICE_ID", 0))
    torch.npu.set_device(card)
    x = torch.rand(16, 32, device=f"npu:{card}")
    y = torch.empty_like(x)
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        halve_kernel(x, y)
    graph.replay()
    assert_allclose(y.cpu().numpy(), (x * 0.5).cpu().numpy(), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    test_halve_in_graph()
'''


@pytest.mark.slow  # imports pypto in a real job
def test_graph_capture_in_a_model_test_is_sim_unsupported_not_a_defect(warm_sim, tmp_path):
    script = tmp_path / "halve_graph.py"
    script.write_text(GRAPH_CAPTURE)
    report = run_submission(script, RunOptions(graph_verify=False, work_dir=tmp_path / "w"), warm=warm_sim)
    case = report.cases[0]
    assert case.verdict == "sim_unsupported", (case.verdict, case.verdict_reason, case.error)
    assert "torch.npu.NPUGraph()" in case.verdict_reason
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.INFRA


def test_a_torch_call_cpu_torch_lacks_on_an_npu_device_needs_a_real_npu():
    proc = in_fresh_python("""
        from runtime.devices import standin
        standin.offer()
        import torch, torch_npu
        try:
            torch.rand((2, 3), dtype=torch.int32, device="npu:0")
        except NotImplementedError as exc:
            print(type(exc).__name__, isinstance(exc, torch_npu.NeedsRealNpu), exc)
        try:
            torch.rand((2, 3), dtype=torch.int32)  # on the CPU by the script's own choice: torch's own error
        except NotImplementedError as exc:
            print(type(exc).__name__)
    """)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("NpuKernelMissing True torch.rand() on an npu device needs a real NPU"), first
    assert second == "NotImplementedError"
    assert simgap.detect(first) == "the test calls torch.rand(), which only a real NPU can run"


def test_an_hccl_process_group_is_refused_at_once_and_gloo_is_left_alone():
    proc = in_fresh_python("""
        from runtime.devices import standin
        standin.offer()
        import torch, torch_npu
        import torch.distributed as dist
        try:
            dist.init_process_group(backend="hccl", rank=0, world_size=2, init_method="tcp://127.0.0.1:1")
        except torch_npu.NeedsRealNpu as exc:
            print(exc)
        try:
            dist.init_process_group("gloo", rank=0, world_size=1, init_method="bogus://x")
        except Exception as exc:
            print(type(exc).__name__, "needs a real NPU" in str(exc))
    """)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("torch.distributed.init_process_group() needs a real NPU for backend 'hccl'"), first
    assert second.endswith("False"), second  # torch's own error for a bad init method: not ours
    assert simgap.detect(first) == \
        "the test calls torch.distributed.init_process_group(), which only a real NPU can run"
