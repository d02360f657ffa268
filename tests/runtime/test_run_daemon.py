"""The run daemon (docs/run-daemon.md): the same report with and without it, replaced when the source
digest changes, gone after its idle timeout, and deaf to every user but its owner."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.fence.scratch import sweep_dead
from runtime.warm.daemon_address import socket_name
from runtime.warm.daemon_client import DaemonParent
from tests.conftest import EXAMPLES, REPO

NOBODY = 65534


def hello(path: Path) -> dict:
    """What the daemon says to a new caller; the session ends at once."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(path))
        line = s.makefile("rb").readline()
        s.sendall(b'{"op": "quit"}\n')
        while s.recv(1 << 16):  # until the daemon ends the session
            pass
    return json.loads(line)


def gone(pid: int, within_s: float = 120.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def cache(calculator_cache: Path) -> Iterator[Path]:
    """A cache dir of its own (its own daemon) with the machine's calculator, where another user may
    walk up to the daemon's directory (pytest's own tmp dirs are closed to them)."""
    d = Path(tempfile.mkdtemp(prefix="daemon-test-"))
    d.chmod(0o755)
    (d / "calculator").symlink_to(calculator_cache / "calculator")
    yield d
    for sock in (d / f"run-daemon-{os.getuid()}").glob("*.sock"):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(sock))
                pid = json.loads(s.makefile("rb").readline())["pid"]
                s.sendall(b'{"op": "shutdown"}\n')
        except (OSError, ValueError, KeyError):
            continue
        # It removes its scratch as it exits: the run's leftover check (tests/leftovers.py) must not see it.
        assert gone(pid), f"the run daemon {pid} did not exit on shutdown"
    shutil.rmtree(d, ignore_errors=True)


def run_socket(cache: Path, cwd: str = "/tmp") -> Path:
    """The socket of the daemon that runs started in `cwd` use (one per starting dir)."""
    return cache / f"run-daemon-{os.getuid()}" / socket_name("sim", cwd)


def crosscheck_run(cache: Path, *extra: str, path: Path = EXAMPLES / "scale_add", cwd: str = "/tmp") -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSCHECK_")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="80")
    done = subprocess.run([sys.executable, "-m", "server.cli", "run", str(path), "--json", "-",
                           "--cache-dir", str(cache), *extra], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def by_case(report: dict) -> dict:
    return {c["case"]: (c["verdict"], c["structural"], c["precision"], (c.get("graph_verify") or {}).get("status"),
                        c["output_written"], c.get("kernel_launches")) for c in report["cases"]}


@pytest.mark.slow
def test_the_same_report_case_by_case_with_and_without_the_daemon(cache):
    plain = crosscheck_run(cache, "--no-daemon")
    sock = run_socket(cache)
    assert not sock.exists()  # --no-daemon starts none
    first = crosscheck_run(cache)
    pid = hello(sock)["pid"]
    second = crosscheck_run(cache)
    assert hello(sock)["pid"] == pid  # the second run used the daemon the first one started
    assert by_case(plain) == by_case(first) == by_case(second)
    def fence(r: dict) -> dict:  # each job gets a uid of its own
        return {k: v for k, v in r["environment"]["sandbox"].items() if k != "uid"}

    def steady(r: dict) -> dict:
        # The writable scan is the host at the warm parent's start (docs/SECURITY.md); the hostile tests
        # on the other xdist worker make and remove their own world-writable places meanwhile.
        return {k: [p for p in v if "crosscheck-hostile-" not in p] if k in ("covered", "private_dirs") else v
                for k, v in fence(r).items()}
    assert steady(plain) == steady(second) and steady(plain)["private_dirs"]
    assert {v[0] for v in by_case(second).values()} == {"sim_garbage_graph_ok"}


@pytest.mark.slow
def test_a_script_reading_pyptos_simulator_files_finds_them_with_the_daemon_up(cache, tmp_path):
    # pypto's cost_model example opens ./output/<newest>/CostModelSimulationOutput/merged_swimlane.json; the
    # daemon's parent silences those files for every run, so a script runs in a private stock parent.
    from tests.runtime.test_example_scripts import COST_STYLE

    script = tmp_path / "read_output.py"
    script.write_text(COST_STYLE)
    crosscheck_run(cache)  # the daemon is up
    report = crosscheck_run(cache, "--no-graph-verify", path=script)
    assert [c["verdict"] for c in report["cases"]] == ["sim_output_unwritten"], report["cases"][0]["verdict_reason"]
    assert crosscheck_run(cache)["cases"]  # and the daemon still serves packages


@pytest.mark.slow
def test_the_daemon_is_replaced_when_the_source_digest_changes(cache):
    old = DaemonParent("sim", cache, digest="a" * 16)
    pid = old.start()["pid"]
    old.close()
    assert hello(old.path)["digest"] == "a" * 16  # still there between runs
    new = DaemonParent("sim", cache, digest="b" * 16)
    info = new.start()
    new.close()
    assert info["pid"] != pid and info["digest"] == "b" * 16
    assert gone(pid)
    assert not old.scratch.exists()  # the old daemon took its scratch with it


@pytest.mark.slow
def test_runs_from_two_dirs_keep_a_daemon_each(cache, tmp_path):
    """Two terminals in two dirs used to replace each other's daemon at every run (the dir is in the digest)."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    other.chmod(0o755)
    crosscheck_run(cache)
    first = hello(run_socket(cache))["pid"]
    crosscheck_run(cache, cwd=str(other))
    second = hello(run_socket(cache, str(other)))["pid"]
    assert second != first and hello(run_socket(cache))["pid"] == first  # both still serve their dir


@pytest.mark.slow
def test_a_killed_daemons_scratch_goes_with_the_next_sweep(cache):
    parent = DaemonParent("sim", cache)
    pid = parent.start()["pid"]
    parent.close()
    sweep_dead()
    assert parent.scratch.exists()  # a live daemon's scratch stays
    os.kill(pid, 9)
    assert gone(pid)
    swept: list = []
    deadline = time.monotonic() + 60
    while parent.scratch not in swept and time.monotonic() < deadline:  # its children hold the scratch's lock
        swept = sweep_dead()  # until they die with it; the next warm parent's or worker's start sweeps
        time.sleep(0.2)
    assert parent.scratch in swept
    assert not parent.scratch.exists()


@pytest.mark.slow
def test_the_daemon_exits_after_its_idle_timeout(cache, monkeypatch):
    monkeypatch.setenv("CROSSCHECK_DAEMON_IDLE_S", "3")
    parent = DaemonParent("sim", cache)
    pid = parent.start()["pid"]
    parent.close()
    assert gone(pid)
    assert not parent.path.exists() and not parent.scratch.exists()


@pytest.mark.slow
@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as a second user")
def test_a_second_user_cannot_talk_to_the_daemon(cache):
    parent = DaemonParent("sim", cache)
    pid = parent.start()["pid"]
    parent.close()
    probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
             "try:\n s.connect(sys.argv[1])\nexcept OSError as e:\n print('refused', type(e).__name__); sys.exit()\n"
             "print(s.makefile('rb').readline().decode().strip())\n")

    def as_nobody() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/usr/bin/python3", "-c", probe, str(parent.path)], capture_output=True, text=True,
                              timeout=60, user=NOBODY, group=NOBODY, extra_groups=[], check=False)

    assert as_nobody().stdout.startswith("refused PermissionError")  # the 0700 directory
    parent.dir.chmod(0o711)  # even with the doors opened by hand, the daemon asks who is calling
    parent.path.chmod(0o666)
    try:
        answer = json.loads(as_nobody().stdout)
    finally:
        parent.dir.chmod(0o700)
        parent.path.chmod(0o600)
    assert answer["ready"] is False and "only its owner" in answer["error"]
    assert hello(parent.path)["pid"] == pid  # and it still serves its owner


HANDED = """
import json, sys
from server.cli import main
code = main(["run", sys.argv[1], "--cache-dir", sys.argv[2], "--json", sys.argv[3], *sys.argv[5:]])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "pypto", "pydantic", "rich", "numpy"})
open(sys.argv[4], "w").write(json.dumps({"code": code, "heavy": heavy}))
"""


def handed_run(cache: Path, tmp: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict, Path]:
    """`crosscheck run` in a fresh interpreter; what it imported and returned."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSCHECK_")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="80")
    report, seen = tmp / "report.json", tmp / "seen.json"
    report.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", HANDED, str(EXAMPLES / "scale_add"), str(cache), str(report),
                           str(seen), *extra], env=env, cwd="/tmp", capture_output=True, text=True, timeout=600,
                          check=False)
    return done, json.loads(seen.read_text()), report


@pytest.mark.slow
def test_a_run_handed_to_the_daemon_imports_nothing_heavy_and_gets_the_same_verdicts(cache, tmp_path):
    crosscheck_run(cache)  # starts the daemon the ordinary way
    pid = hello(run_socket(cache))["pid"]
    done, seen, report = handed_run(cache, tmp_path)
    assert seen == {"code": 0, "heavy": []}, done.stderr  # torch, pypto, pydantic, rich: all in the daemon
    assert "result: acceptable" in done.stderr and "scale_add" in done.stdout  # printed on our stdio
    assert by_case(json.loads(report.read_text())) == by_case(crosscheck_run(cache, "--no-daemon"))
    assert hello(run_socket(cache))["pid"] == pid


@pytest.mark.slow
def test_what_the_daemon_cannot_serve_starts_the_ordinary_way(cache, tmp_path):
    crosscheck_run(cache)
    # --no-daemon given abbreviated: only the run process's own parser sees it, and hands the run back.
    done, seen, report = handed_run(cache, tmp_path, "--no-dae")
    assert seen["code"] == 0 and "rich" in seen["heavy"], done.stderr  # ran and printed here (a private warm parent)
    assert json.loads(report.read_text())["cases"]
    done, seen, _ = handed_run(cache, tmp_path, "--case-timeout", "-1")  # a usage error, printed once
    assert seen == {"code": 2, "heavy": []} and done.stderr.count("usage: crosscheck run") == 1


def test_a_daemon_that_dies_at_start_leaves_the_run_to_go_on_without_it(cache):
    """A directory where the daemon's socket goes: the daemon cannot take its place and exits; the run
    says so once and runs on a private warm parent (before, it waited for the daemon's whole start timeout)."""
    sock = run_socket(cache)
    sock.mkdir(parents=True)
    (sock / "in-the-way").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSCHECK_")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="80")
    done = subprocess.run([sys.executable, "-m", "server.cli", "run", str(EXAMPLES / "scale_add"), "--json", "-",
                           "--cache-dir", str(cache)], env=env, cwd="/tmp", capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("note: the run daemon did not start") == 1, done.stderr
    assert {c["verdict"] for c in json.loads(done.stdout)["cases"]} == {"sim_garbage_graph_ok"}, done.stdout
    # The dead daemon's scratch went with the run (it used to stay in the temp dir for good); other tests'
    # daemons, of other cache dirs, have scratches of their own.
    where = hashlib.sha256(str(cache / f"run-daemon-{os.getuid()}").encode()).hexdigest()[:8]
    assert not list(Path(tempfile.gettempdir()).glob(f"crosscheck-daemon-{os.getuid()}-sim-*-{where}")), "scratch left"
