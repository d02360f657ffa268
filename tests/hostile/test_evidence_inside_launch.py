"""Forgeries that run the submission's Python inside a launch, or take the job's event pipe (issue 33's open rows in
docs/SECURITY.md): each is examples/wrong_maths (kernel x*3+y, golden x*2+y) plus plain Python that names nothing
of Crosscheck's. None may be acceptable; each is `suspect_fake_pass` with the act named. Then the other side
(issue 31): honest threads are no tamper, and a harness failure claimed after the launch is no infrastructure.
"""
from __future__ import annotations

import pytest

from runtime import exit_codes, verdicts
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES
from tests.hostile.test_evidence_reach import attack
from tests.hostile.test_evidence_tamper import REWRITE

pytestmark = pytest.mark.slow

# A finalizer that re-arms itself: it runs at every garbage collection, pypto's launch included, and once the graph
# has written `out` it copies the golden over it; the CSV is rewritten after the launch.
FINALIZER = REWRITE + '''
import gc

_pair = []

class _Again:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it, whenever pypto's code allocates enough

    def __del__(self):
        out, want, first = _pair
        if not torch.equal(out, first) and not torch.equal(out, want):
            out.copy_(want)
        _Again()

def hide(out, want):
    _pair[:] = [out, want, out.clone()]
    gc.set_threshold(1)
    _Again()

def after_launch(out):
    gc.set_threshold(700)
    rewrite_evidence()
'''
# The output as a tensor subclass: pypto's own torch calls on it run its __torch_function__ inside the launch.
TORCH_FUNCTION = REWRITE + '''
_pair = []

class Sneaky(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        result = super().__torch_function__(func, types, args, kwargs or {})
        if _pair:
            with torch._C.DisableTorchFunction():
                out, want, first = _pair
                if not torch.equal(out, first):
                    out.copy_(want)
        return result

def hide(out, want):
    plain = out.as_subclass(torch.Tensor)
    _pair[:] = [plain, want, plain.clone()]

def after_launch(out):
    rewrite_evidence()
'''
# The job's event pipe replaced by a relay that drops tamper reports and rewrites pypto's CSV rows to PASS, with the
# finalizer above copying the golden in inside the launch.
RELAY = FINALIZER + '''
import json, os, threading

def _event_fd():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:") and os.get_inheritable(fd) is not None:
                import fcntl
                if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_WRONLY:
                    return fd
        except OSError:
            pass

def _relay(read_end, real):
    buffered = b""
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            return
        buffered += chunk
        *lines, buffered = buffered.split(b"\\n")
        for line in lines:
            if b'"tamper"' in line:
                continue
            if b'"graph_csv"' in line:
                event = json.loads(line)
                event["text"] = event["text"].replace("FAILED", "PASS")
                line = json.dumps(event).encode()
            os.write(real, line + b"\\n")

_fd = _event_fd()
try:
    _real = os.dup(_fd)
    _r, _w = os.pipe()
    os.dup2(_w, _fd)
    threading.Thread(target=_relay, args=(_r, _real), daemon=True).start()
    RELAYED = "relayed"
except OSError as exc:
    RELAYED = f"refused: {exc}"
'''
# After the launch the job writes an internal error of the harness on its pipe and exits as the harness does.
HARNESS_CLAIM = '''
import json, os

def hide(out, want):
    pass

def after_launch(out):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                os.write(fd, json.dumps({"event": "internal_error", "error": {
                    "type": "PackageNotFoundError", "message": "No package metadata was found for pypto",
                    "traceback": "runtime/evidence/graph_verify.py"}}).encode() + b"\\n")
        except OSError:
            pass
    os._exit(70)
'''
ATTACKS = {"finalizer": FINALIZER, "torch_function": TORCH_FUNCTION, "relay": RELAY}


@pytest.mark.parametrize("name", ATTACKS)
def test_python_inside_a_launch_is_named(warm_sim, calculator_cache, tmp_path, name):
    pkg = attack(tmp_path, ATTACKS[name])
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "work", timeout_s=120,
                                            cases=["wrong_maths_32x64"]), warm=warm_sim)
    case = report.cases[0]
    assert not verdicts.acceptable(case.verdict, "sim"), (case.verdict, case.verdict_reason)
    assert case.verdict == verdicts.SUSPECT_FAKE_PASS, (case.verdict, case.verdict_reason)
    found = " ".join(case.evidence["contradictions"])
    if name == "torch_function":  # pypto 0.2.0 calls torch on its arguments only while reading the kernel
        assert "ran its own Python" in found or "as left: FAILED" in found, found
    else:
        assert "ran its own Python" in found and "inside launch 0" in found, found


def test_a_harness_failure_claimed_after_the_launch_is_the_kernels(warm_sim, calculator_cache, tmp_path):
    pkg = attack(tmp_path, HARNESS_CLAIM)
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "work", timeout_s=120,
                                            cases=["wrong_maths_32x64"]), warm=warm_sim)
    case = report.cases[0]
    assert case.stage != verdicts.HARNESS_STAGE, (case.verdict, case.stage, case.verdict_reason)
    assert exit_codes.of_case(case.verdict, "sim", case.stage) == exit_codes.KERNEL_DEFECT, (case.verdict, case.stage)


# An honest golden computed in a thread pool left running, and a wrapper whose pool stays alive over the launch.
HONEST_THREADS_GOLDEN = '''
from concurrent.futures import ThreadPoolExecutor
import torch

POOL = ThreadPoolExecutor(max_workers=2)


def relu_golden(x):
    return POOL.submit(torch.relu, x).result()
'''


def test_an_honest_thread_pool_is_no_tamper(warm_sim, calculator_cache, tmp_path):
    import shutil

    pkg = tmp_path / "relu"
    shutil.copytree(EXAMPLES / "relu", pkg)
    (pkg / "relu_golden.py").write_text(HONEST_THREADS_GOLDEN)
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "work", timeout_s=120),
                            warm=warm_sim)
    for case in report.cases:
        assert case.verdict == verdicts.SIM_GARBAGE_GRAPH_OK, (case.verdict, case.verdict_reason)
        assert case.evidence["contradictions"] == [], case.evidence["contradictions"]
