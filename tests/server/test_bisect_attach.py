"""`crosscheck bisect ... --suite-run N --server URL --on-this-host` (client/bisect_server.py): a real bisect
on this host on a git repository built here, its first bad commit attached to a suite run of a live server;
and the checks made before any revision runs. The revisions run on the service: tests/e2e/test_bisect_service.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.conftest import REPO
from tests.runtime.bisect_history import WRONG, commit, new_repo, operator_files
from tests.server.suites import sim_report
from tests.server.test_ci_client import crosscheck, live

__all__ = ["live"]  # the live server fixture, shared

CASE = "scale_add_32x64"


def uploaded_run(live: dict[str, Any], key: str) -> int:
    """A suite run holding scale_add, uploaded as a CI job would (POST /ingest/report)."""
    files = {p.name: p.read_text() for p in (REPO / "examples" / "scale_add").iterdir() if p.is_file()}
    r = httpx.post(live["url"] + "/api/v1/ingest/report", params={"suite": "bisects", "run_key": key},
                   content=json.dumps(sim_report(files, "scale_add", verdicts={CASE: "structural_error"})),
                   headers={"Authorization": f"Bearer {live['tokens']['submit']}",
                            "Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    return int(r.json()["suite_run_id"])


def run_of(live: dict[str, Any], run_id: int) -> dict[str, Any]:
    r = httpx.get(f"{live['url']}/api/v1/suite-runs/{run_id}",
                  headers={"Authorization": f"Bearer {live['tokens']['read']}"})
    assert r.status_code == 200, r.text
    return dict(r.json())


def bisect(live: dict[str, Any], repo: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return crosscheck(live, "bisect", str(repo), "--op", "scale_add", "--case", CASE, *args, **kwargs)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    repo = new_repo(tmp_path_factory.mktemp("attach") / "repo")
    return repo, [commit(repo, "add scale_add", {**operator_files(cases=[CASE]), "README.md": "ops\n"}),
                  commit(repo, "readme: a word", {"README.md": "ops and more\n"}),
                  commit(repo, "scale_add: a faster scale", operator_files(WRONG, cases=[CASE]))]


@pytest.mark.slow  # two real pypto runs
def test_the_first_bad_commit_is_attached_to_the_suite_run(live, history, calculator_cache):
    repo, shas = history
    run_id = uploaded_run(live, "attach-1")
    proc = bisect(live, repo, "--good", shas[0], "--bad", shas[2], "--cache-dir", str(calculator_cache),
                  "--suite-run", str(run_id), "--server", live["url"], "--on-this-host", timeout_s=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"first bad commit: {shas[2]} scale_add: a faster scale" in proc.stdout.splitlines()
    assert f"culprit attached to suite run {run_id}" in proc.stdout
    assert [(c["operator"], c["commit"], c["subject"], c["metric"]) for c in run_of(live, run_id)["culprits"]] == \
        [("scale_add", shas[2], "scale_add: a faster scale", "verdict")]


@pytest.mark.parametrize(("args", "says"), [
    (("--suite-run", "999999"), "no suite run 999999"),
    (("--suite-run", "{run}", "--op", "Nosuch"), "has no operator Nosuch"),
    (("--server", "{url}", "--on-this-host"), "--on-this-host is for --suite-run N"),
    (("--suite-run", "{run}", "--server", ""), "--suite-run needs --server"),
])
def test_what_cannot_be_attached_is_refused_before_any_revision_runs(live, history, args, says):
    repo, shas = history
    run_id = uploaded_run(live, "attach-2")
    filled = [a.format(run=run_id, url=live["url"]) for a in args]
    if "--server" not in filled:
        filled += ["--server", live["url"]]
    proc = bisect(live, repo, "--good", shas[0], "--bad", shas[2], *filled, timeout_s=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says in proc.stderr and "bisecting" not in proc.stdout, proc.stdout + proc.stderr
    assert run_of(live, run_id)["culprits"] == []
