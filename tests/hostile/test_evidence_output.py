"""Output floods (issue 8 item 9): the harness reads tails from disk with caps, never whole files."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile.evidence_kit import NORMAL, package, run

pytestmark = pytest.mark.slow
STDOUT_MIB = 512  # more than the 400 MiB the runner may reach: reading it whole would show
END_MARK = "END-OF-FLOOD"

# `crosscheck run` in a process of its own, so that its peak memory is its own: VmHWM counts this
# process's memory since its exec (ru_maxrss would also count what pytest held when it forked), and
# not the warm parent or the jobs, which are other processes.
PEAK_MIB = "int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024"
RUNNER = f'''
import json, sys
from pathlib import Path
from runtime.runner import RunOptions, run_submission
case = run_submission(Path(sys.argv[1]), RunOptions(work_dir=Path(sys.argv[2]), graph_verify=False)).cases[0]
print(json.dumps({{"verdict": case.verdict, "stdout": case.logs["stdout"], "job_dir": case.job_dir,
                   "evidence_dir": case.evidence_dir, "maxrss_mib": {PEAK_MIB}}}))
'''
UNFIXED_TAIL = f'''
import sys
from pathlib import Path
from tests.hostile.unfixed_evidence import tail
assert tail(Path(sys.argv[1]), 10**6).endswith("\\n")
print({PEAK_MIB})
'''


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_half_a_gigabyte_of_stdout_stays_on_disk(tmp_path):
    body = f'''
import sys
line = "x" * ((1 << 20) - 1) + "\\n"
for _ in range({STDOUT_MIB}):
    sys.stdout.write(line)
print("{END_MARK}")
sys.stdout.flush()
''' + NORMAL
    work = tmp_path / "work"
    try:
        seen = json.loads(_python(RUNNER, str(package(tmp_path, body)), str(work)))
        stdout = Path(seen["job_dir"]) / "stdout.txt"
        assert stdout.stat().st_size > STDOUT_MIB * 2**20
        assert seen["verdict"] == "sim_output_unwritten" and seen["stdout"].rstrip().endswith(END_MARK)
        assert (Path(seen["evidence_dir"]) / "stdout.txt").stat().st_size <= 4 * 2**20  # a capped tail
        assert seen["maxrss_mib"] < 400, seen["maxrss_mib"]
        # The old tail() read the whole file into memory (1.9 GB of stdout: 3.9 GB RSS).
        assert float(_python(UNFIXED_TAIL, str(stdout))) > STDOUT_MIB
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_an_event_flood_is_cut_and_not_accepted(warm_sim, tmp_path):
    body = '''
import os
from runtime.evidence import instrument
line = b'{"event": "noise", "pad": "' + b"y" * 200 + b'"}\\n'
fd = instrument._recorder.events.fd
for _ in range(100_000):  # about 21 MiB of well-formed events
    os.write(fd, line)
''' + NORMAL
    case, raw = run(package(tmp_path, body), warm_sim, tmp_path / "work")
    assert len(raw["events"]) <= 20_000
    assert case.verdict == "suspect_fake_pass" and "the rest was dropped" in case.verdict_reason, case.verdict_reason
