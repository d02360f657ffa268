"""Wrong maths forged from inside the job without naming Crosscheck (issue 33): each submission is
examples/wrong_maths (its kernel computes x*3+y, the golden x*2+y) plus plain Python aimed at pypto, torch and
the files pypto writes. None may be acceptable. On main before this the first one, the issue's own forgery (an
instance attribute `_run_with_cpu` on the kernel object that copies the golden into `out` inside the launch, the
CSV's golden row rewritten to PASS and "FAILED" dropped from the plogs), got `sim_garbage_graph_ok`.
"""
from __future__ import annotations

import pytest

from runtime import verdicts
from runtime.runner import RunOptions, run_submission
from tests.hostile.test_evidence_reach import attack

pytestmark = pytest.mark.slow

# pypto's files, rewritten to say the graph matched: the golden rows PASS with zero error, no FAILED in a plog.
REWRITE = '''
import csv, glob, io, os

def rewrite_evidence():
    out = os.environ["TILE_FWK_OUTPUT_DIR"]
    for path in glob.glob(os.path.join(out, "*", "verify_*", "verify_result_brief.csv")):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        if not rows:
            continue
        for row in rows:
            if row.get("referPassName", "").strip() == "golden":
                row.update(verifyResult="PASS", maxAbsDiff="0.000000", maxRelDiff="0.000000", errorCount="0",
                           averageAbsDiff="0.000000", averageRelDiff="0.000000", errorRatio="0.000000")
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        with open(path, "w") as f:
            f.write(text.getvalue())
    for path in glob.glob(os.path.join(os.environ["ASCEND_PROCESS_LOG_PATH"], "**", "*.log"), recursive=True):
        with open(path) as f:
            lines = [line for line in f if "FAILED" not in line]
        with open(path, "w") as f:
            f.writelines(lines)
'''
# The files are rewritten when the job reports its result: pypto's stdio buffers are flushed by then.
AT_RESULT = '''
import json
_dumps = json.dumps

def _late(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("event") == "result":
        rewrite_evidence()
    return _dumps(obj, *args, **kwargs)

json.dumps = _late
'''
# The forgery: an instance attribute shadows the class's method (the seal watched classes only).
INSTANCE_ATTR = REWRITE + AT_RESULT + '''
_pair = []

def hide(out, want):
    _pair[:] = [out, want]
    real = type(wrong_maths_kernel)._run_with_cpu.__get__(wrong_maths_kernel)

    def _run_with_cpu(*args):
        real(*args)
        _pair[0].copy_(_pair[1])

    wrong_maths_kernel._run_with_cpu = _run_with_cpu

def after_launch(out):
    pass
'''
# A pypto module function patched for the launch only, restored by itself before the launch returns.
PYPTO_FUNCTION = REWRITE + AT_RESULT + '''
import pypto.frontend.parser.entry as _entry
_pair = []
_real = _entry._cost_model_run_once_data_from_host

def _once(*args):
    _real(*args)
    _pair[0].copy_(_pair[1])
    _entry._cost_model_run_once_data_from_host = _real

def hide(out, want):
    _pair[:] = [out, want]
    _entry._cost_model_run_once_data_from_host = _once

def after_launch(out):
    pass
'''
# The class's method replaced, and put back after the launch.
PYPTO_CLASS = REWRITE + AT_RESULT + '''
from pypto.frontend.parser.entry import JitCallableWrapper
_pair = []
_real = JitCallableWrapper._run_with_cpu

def _run_with_cpu(self, *args):
    _real(self, *args)
    _pair[0].copy_(_pair[1])

def hide(out, want):
    _pair[:] = [out, want]
    JitCallableWrapper._run_with_cpu = _run_with_cpu

def after_launch(out):
    JitCallableWrapper._run_with_cpu = _real
'''
# The output written after the launch, then the harness's own reads answered through patched torch.
AFTER_LAUNCH = REWRITE + AT_RESULT + '''
def hide(out, want):
    global _want
    _want = want

def after_launch(out):
    out.copy_(_want)
'''
# torch's functions the harness's compare calls answer "equal" for everything, after the launch.
TORCH_COMPARE = REWRITE + AT_RESULT + '''
_armed = []
_real = {name: getattr(torch.Tensor, name) for name in ("__sub__", "sub", "abs")}
_isclose, _allclose, _isfinite = torch.isclose, torch.allclose, torch.isfinite

def _zero(name):
    def method(self, *args, **kwargs):
        value = _real[name](self, *args, **kwargs)
        return value * 0 if _armed else value
    return method

for _name in _real:
    setattr(torch.Tensor, _name, _zero(_name))
torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool) if _armed else _isclose(a, b, *x, **k)
torch.allclose = lambda a, b, *x, **k: True if _armed else _allclose(a, b, *x, **k)

def hide(out, want):
    pass

def after_launch(out):
    _armed.append(1)
'''
# A thread that waits for the graph to write `out` inside the launch, then copies the golden over it: no patch
# of anything is in place at the launch's start or end.
THREAD = REWRITE + AT_RESULT + '''
import threading, time

def hide(out, want):
    first = out.clone()

    def race():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not torch.equal(out, first):
                out.copy_(want)
                return
            time.sleep(0.0005)

    threading.Thread(target=race, daemon=True).start()

def after_launch(out):
    time.sleep(0.2)
'''
ATTACKS = {"instance_attr": INSTANCE_ATTR, "thread": THREAD, "torch_compare": TORCH_COMPARE, "pypto_function": PYPTO_FUNCTION,
           "pypto_class": PYPTO_CLASS,
           "after_launch": AFTER_LAUNCH}


@pytest.mark.parametrize("name", ATTACKS)
def test_forgeries_that_do_not_name_crosscheck_are_never_acceptable(warm_sim, calculator_cache, tmp_path, name):
    pkg = attack(tmp_path, ATTACKS[name])
    report = run_submission(pkg, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "work", timeout_s=120,
                                            cases=["wrong_maths_32x64"]), warm=warm_sim)
    case = report.cases[0]
    assert case.kernel_launches == 1, (case.verdict, case.verdict_reason, case.error)
    assert not verdicts.acceptable(case.verdict, "sim"), (case.verdict, case.verdict_reason)
    assert case.verdict == verdicts.SUSPECT_FAKE_PASS, (case.verdict, case.verdict_reason)
