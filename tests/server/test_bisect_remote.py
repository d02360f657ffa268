"""`crosscheck bisect ... --server URL` (client/bisect_remote.py): what is refused before a revision's job is
made, against a live server (no worker: nothing here may run). The bisect through a real service and worker
is tests/e2e/test_bisect_service.py."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.conftest import REPO
from tests.runtime.bisect_history import WRONG, commit, new_repo, operator_files
from tests.server.test_ci_client import crosscheck, live
from tests.web.server import free_port

__all__ = ["live"]  # the live server fixture, shared

CASE = "scale_add_32x64"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    repo = new_repo(tmp_path_factory.mktemp("remote") / "repo")
    return repo, [commit(repo, "add scale_add", operator_files(cases=[CASE])),
                  commit(repo, "scale_add: a faster scale", operator_files(WRONG, cases=[CASE]))]


def bisect(live: dict[str, Any], history: tuple[Path, list[str]], *args: str,
           token: str | None = "submit") -> Any:
    repo, shas = history
    return crosscheck(live, "bisect", str(repo), "--op", "scale_add", "--case", CASE, "--good", shas[0],
                      "--bad", shas[1], *args, token=token, timeout_s=120)


def jobs(live: dict[str, Any]) -> list[dict[str, Any]]:
    r = httpx.get(live["url"] + "/api/v1/jobs", headers={"Authorization": f"Bearer {live['tokens']['read']}"})
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


@pytest.mark.parametrize(("args", "token", "code", "says"), [
    (("--server", "http://127.0.0.1:{port}"), "submit", 3, "error: infrastructure: cannot reach"),
    (("--server", "{url}"), None, 2, "the server refused the token (HTTP 401)"),
    (("--server", "{url}", "--no-graph-verify", "--case-timeout", "5"), "submit", 2,
     "--case-timeout, --no-graph-verify: the service's workers run with their own settings"),
    (("--server", "{url}", "--on-this-host"), "submit", 2, "--on-this-host is for --suite-run N"),
    (("--server", "{url}", "--metric", "aicore_us", "--mode", "npu"), "submit", 2, "--metric aicore_us needs --mode sim"),
])
def test_what_cannot_go_to_the_service_is_refused_before_any_revision_runs(live, history, args, token, code, says):
    filled = [a.format(url=live["url"], port=free_port()) for a in args]
    before = jobs(live)
    proc = bisect(live, history, *filled, token=token)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert says in " ".join(proc.stderr.split()), proc.stderr
    assert "[good]" not in proc.stdout and "submitted" not in proc.stdout, proc.stdout
    assert jobs(live) == before


def test_a_token_without_the_submit_scope_stops_the_bisect_at_its_first_submission(live, history):
    """It reads the server (the check passes), but cannot submit: exit 2, not a skip of every revision."""
    before = jobs(live)
    proc = bisect(live, history, "--server", live["url"], token="read")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lacks the 'submit' scope" in proc.stderr and "[good]" not in proc.stdout, proc.stdout + proc.stderr
    assert jobs(live) == before


def test_a_premise_whose_job_is_cancelled_is_an_infrastructure_failure(live, history):
    """No worker here: the good revision's job waits queued; cancelled on the service, the bisect reads it as
    infrastructure (nothing known about the kernel) and exits 3 without submitting the bad revision."""
    repo, shas = history
    before = {j["id"] for j in jobs(live)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSCHECK_")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="80", CROSSCHECK_TOKEN=live["tokens"]["submit"])
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "bisect", str(repo), "--op", "scale_add", "--case",
                             CASE, "--good", shas[0], "--bad", shas[1], "--server", live["url"]],
                            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120  # only to fail instead of hanging: nothing is timed
        while not (mine := [j for j in jobs(live) if j["id"] not in before]):
            assert proc.poll() is None and time.monotonic() < deadline, "the bisect submitted no job"
            time.sleep(0.2)
        (job,) = mine
        r = httpx.post(f"{live['url']}/api/v1/jobs/{job['id']}/cancel",
                       headers={"Authorization": f"Bearer {live['tokens']['submit']}"})
        assert r.status_code == 200, r.text
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, out + err
    assert f"[good] {shas[0][:10]} skipped cancelled before it finished [job {job['id']} " in out, out
    assert f"error: --good {shas[0]} is not acceptable as the bisect needs: cancelled" in err, err
    assert [j["id"] for j in jobs(live) if j["id"] not in before] == [job["id"]]  # the bad one never went
