"""`crosscheck up` and `crosscheck submit` as a user runs them: real processes, a temp data dir."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest

from runtime.evidence import calculator
from tests.conftest import EXAMPLES, REPO
from tests.e2e.conftest import (
    JOB_DEADLINE_S,
    START_DEADLINE_S,
    Stack,
    alive,
    clean_env,
    descendants,
    free_port,
    kill_all,
)

pytestmark = pytest.mark.slow


@dataclass
class Up:
    proc: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    log: Path

    def submit(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "server.cli", "submit", *args],
                              env=clean_env(DATA_DIR=str(self.data_dir), COLUMNS="200"), cwd=REPO,
                              capture_output=True,
                              text=True, timeout=JOB_DEADLINE_S)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory, calculator_cache: Path) -> Iterator[Up]:
    """`crosscheck up` on a fresh data dir (SQLite and the embedded broker: no DATABASE_URL/BROKER_URL)."""
    data = tmp_path_factory.mktemp("up") / "crosscheck-data"
    log = data.parent / "up.log"
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "up", "--port", str(port), "--data-dir",
                                 str(data)], env=clean_env(CACHE_DIR=str(calculator_cache)), cwd=REPO,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"crosscheck up exited: {log.read_text()[-3000:]}")
        if "Press Ctrl-C to stop." not in log.read_text():
            return False
        return httpx.get(url + "/readyz", timeout=2).status_code == 200

    try:
        Stack.wait(ready, START_DEADLINE_S, "crosscheck up to be ready", log)
        yield Up(proc, url, data, log)
    finally:
        if proc.poll() is None:  # a test failed before the Ctrl-C test: stop it the same way
            tree = descendants(proc.pid)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                kill_all([proc.pid, *tree])
                proc.wait()


def test_up_keeps_its_tokens_private(up: Up) -> None:
    tokens = up.data_dir / "tokens.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert '"admin"' in tokens.read_text() and '"worker"' in tokens.read_text()
    assert "admin token" in up.log.read_text()


def test_submit_wait_prints_the_run_table_and_exits_0(up: Up, calculator_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "jobs.json"
    done = up.submit(str(EXAMPLES / "relu"), "--server", up.url, "--wait", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert calculator.status(calculator_cache)[0], "the calculator_cache fixture builds the calculator"
    verdict = "sim_garbage_graph_ok"  # graph verify ran: never picked from the calculator's state
    for case in ("relu_32x64", "relu_64x128"):
        assert any(case in line and verdict in line for line in done.stdout.splitlines()), done.stdout
    assert "2 case(s)" in done.stdout
    assert "finished: every case acceptable" in done.stderr
    [job] = json.loads(out.read_text())["jobs"]
    assert job["status"] == "succeeded" and [c["verdict"] for c in job["report"]["cases"]] == [verdict] * 2


def test_submit_failing_kernel_exits_1(up: Up) -> None:
    done = up.submit(str(EXAMPLES / "missing_vec_tiles"), "--server", up.url, "--wait")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "vec-tile-shape-not-set" in done.stdout


def test_submit_bad_package_exits_2_with_a_plain_message(up: Up, tmp_path: Path) -> None:
    bad = tmp_path / "not_an_operator"
    bad.mkdir()
    (bad / "notes.txt").write_text("no test_cases.json, no kernel")
    done = up.submit(str(bad), "--server", up.url, "--wait")
    assert done.returncode == 2
    # Refused before upload: the folder holds nothing the job could run.
    assert done.stderr.startswith("error:") and "no operator found" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr

    wrong = tmp_path / "kernel.txt"
    wrong.write_text("x")
    done = up.submit(str(wrong), "--server", up.url)
    assert done.returncode == 2 and "upload an operator package" in done.stderr


def test_submit_to_an_unreachable_server_exits_3(up: Up) -> None:
    done = up.submit(str(EXAMPLES / "relu"), "--server", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 3  # infrastructure, not the input
    assert "cannot reach the server" in done.stderr and "Traceback" not in done.stderr


def test_up_keeps_its_data_private(up: Up) -> None:
    """Data dir 0700, every file in it 0600; the admin token is not in a redirected log."""
    assert stat.S_IMODE(up.data_dir.stat().st_mode) == 0o700
    found = [p for p in up.data_dir.rglob("*") if not p.is_symlink()]
    assert {"crosscheck.db", "broker.db", "blobs", "tokens.json"} <= {p.name for p in found}
    loose = [(str(p), oct(stat.S_IMODE(p.stat().st_mode))) for p in found
             if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
    assert not loose
    admin = json.loads((up.data_dir / "tokens.json").read_text())["admin"]
    log = up.log.read_text()
    assert admin not in log and "not printed: stdout is not a terminal" in log


def _celery_main(up: Up) -> int:
    """The Celery main process: the child of `crosscheck up` running celery."""
    for pid in descendants(up.proc.pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if b"celery" in cmd and ppid == up.proc.pid and alive(pid):
            return pid
    raise AssertionError(f"no Celery main process under crosscheck up {up.proc.pid}")


def test_a_sigkill_of_celery_main_leaves_the_api_serving_and_the_worker_restarts(up: Up) -> None:
    admin = json.loads((up.data_dir / "tokens.json").read_text())["admin"]
    headers = {"Authorization": f"Bearer {admin}"}
    before = _celery_main(up)
    os.kill(before, signal.SIGKILL)
    answers = []

    def restarted() -> bool:
        answers.append(httpx.get(up.url + "/readyz", timeout=5).status_code)
        try:
            return _celery_main(up) != before
        except AssertionError:
            return False

    Stack.wait(restarted, START_DEADLINE_S, "a new Celery main process", up.log)
    assert up.proc.poll() is None and set(answers) == {200}
    assert "the worker exited (code -9); restarting it" in up.log.read_text()
    killed_at = httpx.get(up.url + "/api/v1/workers", headers=headers).json()["items"][0]["last_heartbeat"]

    def beating() -> bool:
        items = httpx.get(up.url + "/api/v1/workers", headers=headers, timeout=5).json()["items"]
        return any(w["online"] and w["last_heartbeat"] > killed_at for w in items)

    Stack.wait(beating, START_DEADLINE_S, "the restarted worker's heartbeat", up.log)
    done = up.submit(str(EXAMPLES / "relu"), "--server", up.url, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr


def test_submit_for_a_pypto_no_worker_has_exits_3(up: Up) -> None:
    done = up.submit(str(EXAMPLES / "relu"), "--server", up.url, "--pypto", "9.9.9.dev0", "--wait")
    assert done.returncode == 3, done.stdout + done.stderr  # no capable worker: infrastructure
    assert "no online worker has pypto 9.9.9.dev0" in done.stderr and "Traceback" not in done.stderr


def test_submit_a_kernel_for_a_newer_pypto_exits_2_with_version_skew(up: Up) -> None:
    kernel = REPO / "tests" / "fixtures" / "diagnosis" / "pypto-api-missing"
    done = up.submit(str(kernel), "--server", up.url, "--wait")
    assert done.returncode == 2, done.stdout + done.stderr  # not a kernel defect
    assert "version_skew" in done.stdout and "pypto.PrecisionType" in done.stdout


CONSOLE_NOISE = ("[tasks]", "celery@", "SecurityWarning", "superuser", "HTTP Request", "HTTP/1.1", "INFO",
                 "Connected to", "ready.", "Traceback")


def test_the_console_shows_one_line_per_job_and_nothing_while_it_runs(up: Up) -> None:
    """Without --verbose: the URL, the token's place, then one line per finished job; no Celery banner,
    no superuser warning, no request or heartbeat lines (server/commands/job_feed.py)."""
    admin = json.loads((up.data_dir / "tokens.json").read_text())["admin"]
    with httpx.Client(base_url=up.url + "/api/v1", headers={"Authorization": f"Bearer {admin}"}, timeout=30) as http:
        _one_line_per_job(up, http)


def _one_line_per_job(up: Up, http: httpx.Client) -> None:
    import uuid

    # The feed prints a job's line a moment after it finished: the earlier tests' jobs first.
    done = [j["id"] for j in http.get("/jobs").json()["items"] if j["timings"]["finished_at"]]
    Stack.wait(lambda: all(f"job {i} " in up.log.read_text() for i in done), 30, "the earlier jobs' lines", up.log)
    before = up.log.read_text()
    # A job that outlasts a worker heartbeat (every 10 s) and several job heartbeats.
    script = b"import time\ntime.sleep(15)\nprint('slept')\n"
    accepted = http.post("/submissions", data={"modes": ["sim"]}, files={"file": ("sleeper.py", script)},
                         headers={"Idempotency-Key": uuid.uuid4().hex}).json()
    job_id = accepted["jobs"][0]["id"]
    Stack.wait(lambda: http.get(f"/jobs/{job_id}").json()["status"] == "running", 120, "the job to run", up.log)
    Stack.wait(lambda: http.get(f"/jobs/{job_id}").json()["status"] not in ("queued", "running"), JOB_DEADLINE_S,
               "the job to finish", up.log)
    # it launched no kernel: nothing to judge (runtime/vocabulary.py's words, as every surface says them)
    line = f"job {job_id} sleeper (sim): cannot judge here (not_run)  {up.url}/jobs/{job_id}"
    Stack.wait(lambda: line in up.log.read_text(), 30, f"the console line {line!r}", up.log)
    log = up.log.read_text()
    assert log[len(before):] == line + "\n", log[len(before):]  # nothing else while it ran
    for noise in CONSOLE_NOISE:
        assert noise not in log, (noise, log)
    finished = [j for j in http.get("/jobs").json()["items"] if j["timings"]["finished_at"]]
    for job in finished:  # each job of this module's tests, once
        assert log.count(f"job {job['id']} {job['operator']} ({job['mode']}): ") == 1, (job["id"], log)
    assert log.index("PTO Crosscheck is up at") < log.index(f"job {finished[-1]['id']} ")


# Last: it stops the module's `up`.
def test_up_stops_cleanly_on_ctrl_c(up: Up) -> None:
    tree = descendants(up.proc.pid)
    assert len(tree) >= 3, tree  # the API, Celery's main process and its pool process (and a warm parent)
    up.proc.send_signal(signal.SIGINT)
    assert up.proc.wait(timeout=120) == 0, up.log.read_text()[-3000:]
    Stack.wait(lambda: not [p for p in tree if alive(p)], 30, f"the children {tree} of crosscheck up to exit")
    log = up.log.read_text()
    assert "crosscheck up: stopped" in log
    # Nothing of the children's own shutdown (Celery's "worker: Warm shutdown"): our two lines only.
    after = [line for line in log.split("crosscheck up: stopping...", 1)[1].splitlines() if line.strip()]
    assert after == ["crosscheck up: stopped"], log[-500:]


def test_up_verbose_brings_the_service_logs_back(tmp_path: Path, calculator_cache: Path) -> None:
    """--verbose: Celery's banner, the worker's INFO events and uvicorn's request lines; still no root warning."""
    log = tmp_path / "up-verbose.log"
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "server.cli", "up", "--verbose", "--port", str(port),
                                 "--data-dir", str(tmp_path / "data")], env=clean_env(CACHE_DIR=str(calculator_cache)),
                                cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    tree: list[int] = []
    try:
        def detailed() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"crosscheck up --verbose exited: {log.read_text()[-3000:]}")
            tree[:] = descendants(proc.pid)
            text = log.read_text()
            return "worker.ready name=sim-local@" in text and '"GET /readyz HTTP/1.1" 200' in text

        Stack.wait(detailed, START_DEADLINE_S, "the verbose worker and API logs", log)
        text = log.read_text()
        assert "[tasks]" in text and "jobs.run" in text, text  # Celery's banner
        assert "superuser" not in text and "SecurityWarning" not in text, text
        assert "Finished jobs are listed below." in text
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            kill_all([proc.pid, *tree])
            proc.wait()
