"""Wrong maths made to look right from inside the job (issue 25): the numbers that decide the verdict
must not be computable or alterable by the submission's Python.

Every submission is examples/wrong_maths (its kernel computes x*3+y, the golden x*2+y) plus code
aimed at the harness: patched torch, numpy, hashlib, ctypes, pypto or runtime functions, and pypto's
files rewritten. Each runs through the real runtime with graph verify on. On main before the fix the
first attack got `sim_garbage_graph_ok` (acceptable, exit 0); now none may be acceptable, and the
harness's own graph metrics must show the kernel's real error (about |x|, far above 1e-3).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runtime import verdicts
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

# The wrapper hands `out` and the value the golden expects to `hide(out, want)` before it launches.
ARM = '''
_want = {}

def hide(out, want):
    _want[out.data_ptr()] = want
'''
WRAPPER = '''

def wrong_maths_wrapper(x, y):
    out = torch.empty_like(x)
    hide(out, x * 2.0 + y)
    wrong_maths_kernel(x, y, out)
    after_launch(out)
    return out
'''
REWRITE_CSVS = '''
import ctypes, glob, os

def rewrite_csvs(rewrite):
    ctypes.CDLL(None).fflush(None)  # pypto's CSV sits in stdio buffers until then
    pattern = os.path.join(os.environ["TILE_FWK_OUTPUT_DIR"], "*", "verify_*", "verify_result_brief.csv")
    for path in glob.glob(pattern):
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(rewrite(text))
'''
# The attack: every second and later `detach()` of `out` (the harness's after-launch snapshot and
# its dump) answers the golden, and pypto's CSV is rewritten from FAILED to PASS.
PATCH_DETACH = ARM + REWRITE_CSVS + '''
_detach = torch.Tensor.detach
_seen = {}

def detach(self):
    want = _want.get(self.data_ptr())
    if want is None:
        return _detach(self)
    _seen[self.data_ptr()] = _seen.get(self.data_ptr(), 0) + 1
    return _detach(self) if _seen[self.data_ptr()] == 1 else want.clone()

torch.Tensor.detach = detach

def after_launch(out):
    rewrite_csvs(lambda text: text.replace("FAILED", "PASS"))
'''
# Every torch, numpy and hashlib entry point a harness might read bytes through answers the golden.
PATCH_LIBRARIES = ARM + '''
import hashlib, numpy
_real = {name: getattr(torch.Tensor, name) for name in ("detach", "to", "contiguous", "clone", "cpu", "numpy",
                                                       "view", "reshape", "__getitem__")}

def _swap(name):
    def method(self, *args, **kwargs):
        want = _want.get(_real["view"](self, -1).data_ptr()) if self.is_contiguous() else None
        if want is not None and _armed:
            return _real[name](want, *args, **kwargs)
        return _real[name](self, *args, **kwargs)
    return method

_armed = []
for _name in _real:
    setattr(torch.Tensor, _name, _swap(_name))
_equal, _frombuffer, _sha = torch.equal, numpy.frombuffer, hashlib.sha256
torch.equal = lambda a, b: True if _armed else _equal(a, b)
numpy.frombuffer = lambda *a, **k: _frombuffer(*a, **k)
hashlib.sha256 = lambda *a: _sha(*a)

def after_launch(out):
    _armed.append(1)
'''
# Our own modules: the raw reader and the dump writer answer the golden.
PATCH_RUNTIME = ARM + '''
import sys
_raw = sys.modules["runtime.evidence.rawbytes"]
_real_read = _raw.read_layout

def read_layout(lay):
    want = _want.get(lay.ptr)
    return _real_read(_raw.layout(want)) if want is not None else _real_read(lay)

def after_launch(out):
    pass

_raw.read_layout = read_layout
_raw._STRING_AT = lambda ptr, size: _real_read(_raw.layout(_want[ptr])) if ptr in _want else \\
    __import__("ctypes").string_at(ptr, size)
'''
# pypto's own Python: after the graph wrote `out` inside the launch, the golden is copied over it, before the
# harness reads it; the CSV is rewritten to match the golden exactly.
PATCH_PYPTO = ARM + REWRITE_CSVS + '''
import ctypes, re
from pypto.frontend.parser.entry import JitCallableWrapper
_run = JitCallableWrapper._run_with_cpu

def _run_with_cpu(self, *args):
    _run(self, *args)
    for ptr, want in _want.items():
        ctypes.memmove(ptr, want.data_ptr(), want.numel() * want.element_size())

JitCallableWrapper._run_with_cpu = _run_with_cpu

def after_launch(out):
    rewrite_csvs(lambda text: re.sub(r"FAILED,([^,]*),([^,]*),[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*",
                                     r"PASS,\\1,\\2,0.000000,0.000000,0.000000,0.000000,0,0.000000", text))
'''
# Only pypto's files: the CSV's verdict and numbers rewritten to a plausible pass, the graph's dumped tensors
# overwritten with zeros, the program and the cost model replaced.
EDIT_PYPTO_FILES = ARM + REWRITE_CSVS + '''
import glob, os, re

def after_launch(out):
    rewrite_csvs(lambda text: re.sub(r"FAILED,([^,]*),([^,]*),[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*",
                                     r"PASS,\\1,\\2,0.000412,0.000950,0.000100,0.000200,0,0.000000", text))
    calls = os.path.join(os.environ["TILE_FWK_OUTPUT_DIR"], "*")
    for path in glob.glob(os.path.join(calls, "verify_*", "*.data")):
        size = os.path.getsize(path)
        with open(path, "wb") as f:
            f.write(bytes(size))
    for path in glob.glob(os.path.join(calls, "program.json")):
        with open(path, "w") as f:
            f.write("{}")
    for path in glob.glob(os.path.join(calls, "CostModelSimulationOutput", "_simulate.swim.json")):
        with open(path, "w") as f:
            f.write('[{"blockIdx": 0, "coreType": "AIV", "tasks": [{"taskId": 0, "execStart": 0, "execEnd": 18}]}]')
'''
ATTACKS = {"patch_detach_and_csv": PATCH_DETACH, "patch_torch_numpy_hashlib": PATCH_LIBRARIES,
           "patch_runtime": PATCH_RUNTIME, "patch_pypto_and_csv": PATCH_PYPTO, "edit_pypto_files": EDIT_PYPTO_FILES}


def attack(root: Path, code: str) -> Path:
    pkg = root / "wrong_maths"
    shutil.copytree(EXAMPLES / "wrong_maths", pkg)
    impl = pkg / "wrong_maths_impl.py"
    kernel = impl.read_text().split("\n\ndef wrong_maths_wrapper")[0]
    impl.write_text(kernel + "\n" + code + WRAPPER)
    return pkg


@pytest.mark.parametrize("name", ATTACKS)
def test_wrong_maths_made_to_look_right_is_never_acceptable(warm_sim, calculator_cache, tmp_path, name):
    pkg = attack(tmp_path, ATTACKS[name])
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "work", timeout_s=120,
                                            cases=["wrong_maths_32x64"]), warm=warm_sim)
    case = report.cases[0]
    assert case.kernel_launches == 1, (case.verdict, case.verdict_reason, case.error)
    assert not verdicts.acceptable(case.verdict, "sim"), (case.verdict, case.verdict_reason)
    assert case.verdict in (verdicts.SUSPECT_FAKE_PASS, verdicts.GRAPH_FAIL), case.verdict
    if name not in ("patch_pypto_and_csv", "patch_runtime"):  # those forge the bytes: the seal names them instead
        assert case.graph_verify and case.graph_verify["metrics"]["max_abs_diff"] > 0.5, case.graph_verify
    found = " ".join(case.evidence["contradictions"])  # the first is the reason; the tamper report often leads
    if name == "patch_pypto_and_csv":
        assert "JitCallableWrapper._run_with_cpu" in found, found
    if name == "patch_runtime":
        assert "runtime.evidence.rawbytes" in found, found
    if name in ("patch_detach_and_csv", "edit_pypto_files"):
        assert case.verdict == verdicts.SUSPECT_FAKE_PASS and "verify CSV" in found, found


def test_the_honest_kernels_csv_agrees_with_the_recomputation(warm_sim, calculator_cache, tmp_path):
    """The control: pypto's untouched CSV of the wrong kernel and of a right one is no contradiction."""
    for name, expected in (("wrong_maths", verdicts.GRAPH_FAIL), ("relu", verdicts.SIM_GARBAGE_GRAPH_OK)):
        report = run_submission(EXAMPLES / name, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / name,
                                                            timeout_s=120), warm=warm_sim)
        for case in report.cases:
            assert case.verdict == expected, (name, case.verdict, case.verdict_reason)
            assert case.evidence["contradictions"] == []
