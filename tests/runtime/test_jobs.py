"""A job that crashes, hangs, exhausts memory or cheats becomes a case result, never a dead runtime."""
from __future__ import annotations

import json
import socket
import textwrap
from pathlib import Path

import pytest

from runtime.errors import HostError
from runtime.runner import RunOptions, run_submission

pytestmark = pytest.mark.slow  # runs real pypto compiles

KERNEL = '''
import pypto
import torch


@pypto.frontend.jit
def op_kernel(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    out[:] = x * 2.0
'''


def package(tmp_path: Path, wrapper_body: str, golden_body: str = "return x * 2.0", kernel: str = KERNEL,
            shape=(16, 32), extra: str = "") -> Path:
    pkg = tmp_path / "op"
    pkg.mkdir()
    (pkg / "test_cases.json").write_text(json.dumps({"op_name": "op", "test_cases": [
        {"id": "c1", "seed": 3, "input": {"shape": list(shape), "dtype": "float32"}, "rtol": 1e-3, "atol": 1e-3}]}))
    (pkg / "op_impl.py").write_text(kernel + extra + "\n\ndef op_wrapper(x):\n" + textwrap.indent(wrapper_body, "    ") + "\n")
    (pkg / "op_golden.py").write_text("import torch\n\n\ndef op_golden(x):\n    " + golden_body + "\n")
    return pkg


def run(pkg: Path, warm, tmp_path: Path, **kw):
    options = RunOptions(graph_verify=False, work_dir=tmp_path / "work", **kw)
    report = run_submission(pkg, options, warm=warm)
    assert len(report.cases) == 1
    return report.cases[0]


NORMAL = "out = torch.empty_like(x)\nop_kernel(x, out)\nreturn out"


def test_segfault_is_a_crash(warm_sim, tmp_path):
    case = run(package(tmp_path, "import ctypes\nctypes.string_at(0)\nreturn x"), warm_sim, tmp_path)
    assert case.verdict == "crash" and case.structural == "crash"
    assert "SIGSEGV" in case.error.message
    assert any(d.rule for d in case.diagnosis)


def test_native_exit_is_a_crash(warm_sim, tmp_path):
    case = run(package(tmp_path, "import os\nos._exit(1)"), warm_sim, tmp_path)
    assert case.verdict == "crash" and "exit code 1" in case.error.message


def test_hang_is_a_timeout(warm_sim, tmp_path):
    case = run(package(tmp_path, "while True:\n    pass"), warm_sim, tmp_path, timeout_s=3)
    assert case.verdict == "timeout" and case.structural == "timeout"
    assert case.duration_s < 60  # killed, not waited out


def test_list_of_tensor_in_kernel_hangs_into_a_timeout(warm_sim, tmp_path):
    # pypto 0.2.0: list(tensor) inside a kernel never returns and grows memory (docs/pypto.md §2).
    kernel = KERNEL.replace("out[:] = x * 2.0", "rows = list(x)\n    out[:] = x * 2.0")
    case = run(package(tmp_path, NORMAL, kernel=kernel), warm_sim, tmp_path, timeout_s=6, memory_bytes=4 * 1024**3)
    assert (case.verdict, case.structural) in (("timeout", "timeout"), ("resource_limit", "resource_limit"))


def test_iterating_a_tensor_is_diagnosed(warm_sim, tmp_path):
    kernel = KERNEL.replace("out[:] = x * 2.0", "for row in x:\n        out[:] = row")
    case = run(package(tmp_path, NORMAL, kernel=kernel), warm_sim, tmp_path)
    assert case.verdict == "structural_error" and case.diagnosis[0].rule == "iterate-tensor"


def test_memory_exhaustion_is_a_resource_limit(warm_sim, tmp_path):
    case = run(package(tmp_path, "blob = bytearray(6 * 1024**3)\nreturn x"), warm_sim, tmp_path,
               memory_bytes=3 * 1024**3)
    assert case.structural == "resource_limit" and case.verdict == "resource_limit"
    assert "memory limit" in case.verdict_reason and "3.00 GiB" in case.verdict_reason
    assert "--memory GIB" in case.verdict_reason and case.error.type == "ResourceLimit"


def test_golden_that_raises_is_the_submissions_fault(warm_sim, tmp_path):
    case = run(package(tmp_path, NORMAL, golden_body="raise ValueError('bad golden')"), warm_sim, tmp_path)
    assert case.verdict == "not_run" and case.stage == "golden" and case.kernel_launches == 0
    assert "bad golden" in case.error.message


def test_golden_with_nan_is_the_submissions_fault(warm_sim, tmp_path):
    case = run(package(tmp_path, NORMAL, golden_body="return x / 0.0 * 0.0"), warm_sim, tmp_path)
    assert case.verdict == "not_run" and "non-finite" in case.error.message


def test_no_kernel_launch_is_not_run(warm_sim, tmp_path):
    case = run(package(tmp_path, "return x + 1.0"), warm_sim, tmp_path)
    assert case.verdict == "not_run" and case.kernel_launches == 0


def test_torch_maths_instead_of_kernel_output_is_suspect(warm_sim, tmp_path):
    body = "out = torch.empty_like(x)\nop_kernel(x, out)\nreturn x * 2.0"
    case = run(package(tmp_path, body), warm_sim, tmp_path)
    assert case.verdict == "suspect_fake_pass" and case.kernel_launches == 1
    assert case.metrics["bit_identical"]


def test_decorator_bound_npu_mode_is_forced_to_sim(warm_sim, tmp_path):
    kernel = KERNEL.replace("@pypto.frontend.jit", "@pypto.frontend.jit(runtime_options={'run_mode': pypto.RunMode.NPU})")
    case = run(package(tmp_path, NORMAL, kernel=kernel), warm_sim, tmp_path)
    assert case.verdict == "sim_output_unwritten", (case.error, case.verdict_reason)


def test_job_is_sandboxed(warm_sim, tmp_path):
    # The job checks its own view: a listener this test opens on the host's loopback, and any route
    # out, must be unreachable; and the report must carry the isolation the leader set up.
    listener = socket.create_server(("127.0.0.1", 0))
    probe_port = listener.getsockname()[1]
    probe = '''
import os, socket
found = []
for family, address in ((socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET, ("127.0.0.1", 1))):
    s = socket.socket(family, socket.SOCK_DGRAM)
    try:
        s.connect(address)
        found.append(f"route-to-{address[0]}")
    except OSError:
        pass
    finally:
        s.close()
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    found.append("host-listener-reachable")
except OSError:
    pass
if os.getpid() != 1:
    found.append(f"pid-{os.getpid()}")
try:
    open("/root/.bashrc").read()
    found.append("root-readable")
except OSError:
    pass
if os.getuid() == 0:
    found.append("uid-0")
if found:
    raise RuntimeError("sandbox leak: " + ",".join(found))
out = torch.empty_like(x)
op_kernel(x, out)
return out'''
    options = RunOptions(graph_verify=False, work_dir=tmp_path / "work")
    try:
        report = run_submission(package(tmp_path, probe.replace("PORT", str(probe_port))), options, warm=warm_sim)
    finally:
        listener.close()
    case = report.cases[0]
    assert case.verdict == "sim_output_unwritten", case.error
    sandbox = report.environment.sandbox
    assert sandbox["network_isolated"] and sandbox["pid_namespace"] and sandbox["mount_namespace"], sandbox
    assert sandbox["ipc_namespace"] and sandbox["fresh_proc"] and "/tmp" in sandbox["private_dirs"], sandbox
    assert isinstance(sandbox["uid"], int) and sandbox["uid"] >= 200_000, sandbox
    assert sandbox["memory_limit"].startswith("cgroup"), sandbox


def test_npu_mode_without_npu_is_refused(tmp_path):
    with pytest.raises(HostError, match="no NPU on this host: torch_npu/CANN not found"):
        run_submission(package(tmp_path, NORMAL), RunOptions(mode="npu", work_dir=tmp_path / "w"))


def test_syntax_error_stops_before_running(tmp_path):
    pkg = package(tmp_path, NORMAL, extra="\ndef broken(:\n    pass\n")
    report = run_submission(pkg, RunOptions(work_dir=tmp_path / "w"))
    case = report.cases[0]
    assert case.verdict == "structural_error" and case.stage == "syntax" and case.error.file == "op_impl.py"
    assert case.diagnosis[0].rule == "python-syntax-error"


def test_a_golden_only_an_npu_can_compute_cannot_be_judged_here(warm_sim, tmp_path):
    """issue 35: a golden calling a torch_npu fused op read as a failing kernel; it is `skipped` (exit 3)."""
    from runtime import exit_codes, vocabulary

    # An op the stand-in has no CPU reference for (npu_rms_norm has one: docs/realops.md §12).
    golden = "import torch_npu\n    return torch_npu.npu_fused_infer_attention_score(x, x, x)[0]"
    case = run(package(tmp_path, NORMAL, golden_body=golden), warm_sim, tmp_path)
    assert case.verdict == "not_run" and case.stage == "npu_only", (case.verdict, case.stage, case.error)
    assert "NeedsRealNpu" in case.error.message and "only an NPU" in case.verdict_reason
    assert vocabulary.outcome(case.verdict, "sim", case.stage) == vocabulary.SKIPPED
    assert exit_codes.of_case(case.verdict, "sim", case.stage) == exit_codes.INFRA
