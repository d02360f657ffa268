"""The job as a process: what it can reach, what it leaves behind, how it ends (issue 8 items 8 and 10,
and the classic classes: network, daemon left behind, parent kill, env persistence).

Each submission runs through the real runtime (the warm parent, or `crosscheck run` itself).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from runtime import verdicts
from runtime.runner import RunOptions, run_submission
from tests.conftest import REPO
from tests.hostile.evidence_kit import KERNEL, NORMAL, package, run
from tests.hostile.sandbox_kit import processes_of

pytestmark = pytest.mark.slow

SPIN = "print('SPINNING', flush=True)\nwhile True:\n    pass\n"


def test_no_network_reaches_the_host(warm_sim, tmp_path):
    # A TCP listener on the host's loopback and an abstract unix socket: both are in the host's
    # network namespace, out of the job's.
    tcp = socket.create_server(("127.0.0.1", 0))
    name = f"crosscheck-hostile-{uuid.uuid4().hex}"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind("\0" + name)
    unix.listen()
    body = f'''
import socket
reached = []
try:
    socket.create_connection(("127.0.0.1", {tcp.getsockname()[1]}), timeout=2).close()
    reached.append("tcp")
except OSError:
    pass
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\\0{name}")
    reached.append("unix")
except OSError:
    pass
if reached:
    raise RuntimeError(f"NET reached {{reached}}")
''' + NORMAL
    try:
        case, raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w")
    finally:
        tcp.close()
        unix.close()
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert raw["isolation"]["network_isolated"] is True


def test_a_daemon_does_not_outlive_its_job(warm_sim, tmp_path):
    # Double fork and setsid: the classic daemon. It must die with the job's PID namespace.
    body = '''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
time.sleep(0.5)
''' + NORMAL
    case, raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert processes_of(raw["isolation"]["uid"]) == []


def test_killing_everything_it_can_leaves_the_harness_standing(warm_sim, tmp_path):
    body = '''
import os, signal
for target in (os.getppid(), -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
''' + NORMAL
    case, _raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert warm_sim.proc.poll() is None  # the warm parent still serves
    again, _ = run(package(tmp_path / "op2", NORMAL), warm_sim, tmp_path / "w2")
    assert again.verdict == verdicts.SIM_OUTPUT_UNWRITTEN


def test_nothing_persists_into_the_next_job(warm_sim, tmp_path):
    tag = uuid.uuid4().hex
    first = f'''
import os
os.environ["LEAK_{tag}"] = "1"
os.putenv("LEAK_{tag}", "1")
for folder in ("/tmp", "/var/tmp", "/dev/shm", os.environ["HOME"]):
    open(os.path.join(folder, "LEAK_{tag}"), "w").close()
with open(os.path.join(os.environ["HOME"], ".bashrc"), "a") as f:
    f.write("export LEAK_{tag}=1\\n")
''' + NORMAL
    second = f'''
import os
found = [k for k in os.environ if "{tag}" in k]
for folder in ("/tmp", "/var/tmp", "/dev/shm", os.environ["HOME"]):
    found += [n for n in os.listdir(folder) if "{tag}" in n]
if found:
    raise RuntimeError(f"PERSISTED {{found}}")
''' + NORMAL
    case1, _ = run(package(tmp_path / "op1", first), warm_sim, tmp_path / "w1")
    case2, _ = run(package(tmp_path / "op2", second), warm_sim, tmp_path / "w2")
    assert case1.verdict == case2.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case2.verdict, case2.error)
    assert not [p for d in ("/tmp", "/var/tmp", "/dev/shm") for p in Path(d).glob(f"*{tag}*")]


def test_cancel_kills_the_running_case(warm_sim, tmp_path):
    work = tmp_path / "w"

    def cancel_once_spinning() -> None:
        while not any("SPINNING" in p.read_text() for p in work.glob("jobs/*/stdout.txt")):
            threading.Event().wait(0.1)
        warm_sim.cancel()

    watcher = threading.Thread(target=cancel_once_spinning, daemon=True)
    watcher.start()
    try:
        report = run_submission(package(tmp_path / "op", SPIN), RunOptions(work_dir=work, graph_verify=False,
                                                                           timeout_s=300), warm=warm_sim)
    finally:
        warm_sim.cancelled = False
    assert report.cancelled is True and report.cases == []
    watcher.join()


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "side_effects.py"
    path.write_text(body)
    return path


def test_a_script_ignoring_list_runs_once(warm_sim, tmp_path):
    # It launches its kernel whatever its arguments, and says so on its stdout: the `--list` ask
    # must be its one run, reported as its case.
    script = _script(tmp_path, "import sys\n" + KERNEL + "\nx = torch.randn(16, 32)\nop_kernel(x, torch.empty_like(x))\n"
                               "print('SIDE EFFECT', sys.argv[1:])\n")
    report = run_submission(script, RunOptions(work_dir=tmp_path / "w"), warm=warm_sim)
    assert [c.case for c in report.cases] == ["main"]
    runs = [p for p in (tmp_path / "w").glob("jobs/*/stdout.txt") if "SIDE EFFECT" in p.read_text()]
    assert len(runs) == 1 and "--list" in runs[0].read_text()
    assert report.cases[0].kernel_launches == 1


def test_the_list_ask_has_the_cases_limits(warm_sim, tmp_path):
    script = _script(tmp_path, "bytearray(3 * 2**30)\n")
    report = run_submission(script, RunOptions(work_dir=tmp_path / "w", memory_bytes=2**30), warm=warm_sim)
    assert [c.verdict for c in report.cases] == [verdicts.RESOURCE_LIMIT]
    assert len(list((tmp_path / "w").glob("jobs/*"))) == 1


def _crosscheck_run(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-m", "runtime", "run", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _left_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("crosscheck-"))


def test_crosscheck_run_removes_its_work_dir_unless_kept(tmp_path):
    pkg = package(tmp_path / "src", NORMAL)
    temp = tmp_path / "temp"
    temp.mkdir()
    temp.chmod(0o755)
    done = _crosscheck_run(temp, str(pkg), "--no-graph-verify")
    out, _ = done.communicate(timeout=600)
    assert done.returncode == 0, out
    assert _left_in(temp) == []
    kept = _crosscheck_run(temp, str(pkg), "--no-graph-verify", "--keep")
    out, _ = kept.communicate(timeout=600)
    assert kept.returncode == 0, out
    left = _left_in(temp)
    assert len(left) == 1 and left[0].startswith("crosscheck-run-") and (temp / left[0] / "jobs").is_dir()


def test_crosscheck_run_cleans_up_when_terminated_mid_case(tmp_path):
    pkg = package(tmp_path / "src", SPIN)
    temp = tmp_path / "temp"
    temp.mkdir()
    temp.chmod(0o755)
    proc = _crosscheck_run(temp, str(pkg), "--no-graph-verify", "--case-timeout", "300")
    try:
        while not any("SPINNING" in p.read_text() for p in temp.glob("crosscheck-run-*/jobs/*/stdout.txt")):
            assert proc.poll() is None, proc.communicate()[0]
            threading.Event().wait(0.2)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)  # not the case's 300 s
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert _left_in(temp) == []
