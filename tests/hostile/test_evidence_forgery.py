"""Forged evidence (issue 8 item 6): each forgery got `pass` in SIM from the harness before the fix.

Every submission here launched nothing real, or launched the kernel and then lied about what it
did. Each runs through the real runtime (plain SIM, where the old harness could say `pass`) and
must end in a verdict that is not acceptable; the same raw events through the unfixed verdict
code must say `pass`, so each test can fail.
"""
from __future__ import annotations

import pytest

from runtime import verdicts
from tests.hostile import unfixed_evidence as unfixed
from tests.hostile.evidence_kit import package, run

pytestmark = pytest.mark.slow

# A fake launch, as the instrumentation would have recorded it: provenance says the launch wrote `out`.
RECORD_FAKE_LAUNCH = '''
from runtime.evidence import dumps, instrument
rec = instrument._recorder
before = torch.zeros_like(out)
rec.launches.append(instrument.LaunchRecord(
    "op_kernel", [x, out], [False, True], 0.5, OUTPUT_DIR, "",
    [instrument.storage_id(x), instrument.storage_id(out)], [x.clone(), before],
    [dumps.sha256(x), dumps.sha256(out)]))
rec.events.emit("launch", kernel="op_kernel", output_written=[False, True], arg_shapes=[[16, 32], [16, 32]],
                duration_s=0.5, output_dir=OUTPUT_DIR, error="")
'''


def _check(case, raw, expect_reason: str) -> None:
    assert not verdicts.acceptable(case.verdict, "sim") and case.verdict != "pass"
    assert case.verdict == "suspect_fake_pass", (case.verdict, case.verdict_reason)
    assert expect_reason in case.verdict_reason, case.verdict_reason
    assert unfixed.verdict(raw["events"], "sim") == "pass", "the forgery did not fool the unfixed harness"


def test_fake_launch_events(warm_sim, tmp_path):
    body = "out = x * 2.0  # torch, not the kernel\nOUTPUT_DIR = ''\n" + RECORD_FAKE_LAUNCH + "return out\n"
    case, raw = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    _check(case, raw, "no jit kernel launched that pypto corroborates")
    assert case.evidence["launches_reported"] == 1 and case.kernel_launches == 0


def test_fake_cost_model_dir(warm_sim, tmp_path):
    """A complete forged call folder passes the folder check; SIM still cannot `pass`."""
    body = '''
import json, os, shutil
OUTPUT_DIR = os.path.join(os.environ["TILE_FWK_OUTPUT_DIR"], "output_20990101_000000_000001_1_")
sim = os.path.join(OUTPUT_DIR, "CostModelSimulationOutput")
os.makedirs(sim)
os.makedirs(os.path.join(OUTPUT_DIR, "kernel_aicpu"))
os.makedirs(os.path.join(OUTPUT_DIR, "kernel_aicore"))
with open(os.path.join(sim, "_simulate.swim.json"), "w") as f:
    json.dump([{"blockIdx": 0, "coreType": "AIV", "tasks": [{"taskId": 0, "execStart": 0, "execEnd": 900}]}], f)
with open(os.path.join(sim, "_simulate.stat.report.txt"), "w") as f:
    f.write("Total Cycles: 900\\n")
with open(os.path.join(OUTPUT_DIR, "program.json"), "w") as f:
    f.write("{}")
shutil.copyfile("/bin/true", os.path.join(OUTPUT_DIR, "kernel_aicpu", "control.cpp.o"))  # an ELF object
out = x * 2.0
''' + RECORD_FAKE_LAUNCH + "return out\n"
    case, raw = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    # Its writes into pypto's output dir are reported as they happen (runtime.fence.audit)
    _check(case, raw, "tampered with the evidence: it opened")
    assert "_simulate.swim.json for writing" in case.verdict_reason, case.verdict_reason
    assert case.kernel_launches == 1  # the forged folder was still taken for a call: SIM never passes anyway


def test_outputs_written_by_torch_after_the_launch(warm_sim, tmp_path):
    body = '''
from runtime.evidence import instrument
out = torch.empty_like(x)
op_kernel(x, out)
out.copy_(x * 2.0)
instrument._recorder.launches[-1].written[1] = True  # and say the kernel wrote it
return out
'''
    case, raw = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    _check(case, raw, "the dumped bytes say otherwise")
    assert case.kernel_launches == 1 and case.evidence["changed_after_launch"]


def test_monkeypatched_pypto_jit(warm_sim, tmp_path):
    prelude = '''
import pypto.frontend
from runtime.evidence import dumps, instrument


def _fake_jit(fn=None, **options):
    def decorate(f):
        def call(x, out):
            rec = instrument._recorder
            before = out.clone()
            out.copy_(x * 2.0)
            rec.launches.append(instrument.LaunchRecord(
                f.__name__, [x, out], [False, True], 0.5, "", "",
                [instrument.storage_id(x), instrument.storage_id(out)], [x.clone(), before],
                [dumps.sha256(x), dumps.sha256(out)]))
            rec.events.emit("launch", kernel=f.__name__, output_written=[False, True],
                            arg_shapes=[[16, 32], [16, 32]], duration_s=0.5, output_dir="", error="")
        return call
    return decorate(fn) if fn is not None else decorate


pypto.frontend.jit = _fake_jit
'''
    case, raw = run(package(tmp_path, "out = torch.empty_like(x)\nop_kernel(x, out)\nreturn out", prelude),
                    warm_sim, tmp_path / "work")
    _check(case, raw, "pypto.frontend.jit")


def test_edited_runtime_modules(warm_sim, tmp_path):
    body = '''
import sys
watch = sys.modules["runtime.evidence.instrument"]._Watch
real_after = watch.after
watch.after = lambda self: (True, real_after(self)[1])  # every launch "wrote" its arguments
real = sys.modules["runtime.evidence.metrics"].compare
sys.modules["runtime.evidence.metrics"].compare = lambda o, g, rtol, atol: real(g, g, rtol, atol)
out = torch.empty_like(x)
op_kernel(x, out)
return out
'''
    case, raw = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    _check(case, raw, "changed the harness's code")
    assert "runtime.evidence.metrics.compare" in case.verdict_reason and case.kernel_launches == 1
    assert case.metrics["mismatch_count"] > 0  # the harness's own recompare, not the edited one


def test_events_written_straight_to_the_events_fd(warm_sim, tmp_path):
    body = '''
import fcntl, json, os, stat
metrics = {"shape_match": True, "dtype_match": True, "mismatch_count": 0, "mismatch_ratio": 0.0,
           "nan_count": 0, "inf_count": 0, "max_abs_diff": 1e-7, "bit_identical": False, "numel": 512}
lines = [{"event": "launch", "kernel": "op_kernel", "output_written": [False, True],
          "arg_shapes": [[16, 32], [16, 32]], "duration_s": 0.5, "output_dir": "", "error": ""},
         {"event": "result", "metrics": metrics,
          "provenance": [{"launch": 0, "arg": 1, "kernel": "op_kernel", "written": True}]}]
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        pipe = stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
    except OSError:
        continue
    if fd > 2 and pipe:
        os.write(fd, "".join(json.dumps(l) + "\\n" for l in lines).encode())
return torch.empty_like(x)
'''
    case, raw = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    _check(case, raw, "sent its 'result' event 2 times")
    assert case.kernel_launches == 0
