"""`crosscheck bisect ... --server URL --suite-run N` through a real service: the API (uvicorn) and a real
Celery worker compiling with pypto, on a git repository built here whose kernel turns wrong in the third of
five commits. Only the two premises run (as jobs on the service); the two revisions the search probes are
byte-identical to them and reuse their verdicts (docs/bisect.md §3, §6)."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.e2e.conftest import Stack, running
from tests.runtime.bisect_history import WRONG, commit, new_repo, operator_files
from tests.server.suites import sim_report

pytestmark = pytest.mark.slow  # two real pypto compiles on the worker

CASE = "scale_add_32x64"


@pytest.fixture(scope="module")
def service(sqlite_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running("sqlite", dict(sqlite_env), tmp_path_factory.mktemp("logs-bisect"), worker="e2e-bisect") as s:
        yield s


def five(root: Path) -> tuple[Path, list[str]]:
    """c1 adds scale_add, c2 and c4, c5 touch only the README, c3 breaks the kernel."""
    repo = new_repo(root)
    shas = [commit(repo, "add scale_add", {**operator_files(cases=[CASE]), "README.md": "ops\n"}),
            commit(repo, "readme: a word", {"README.md": "ops and more\n"}),
            commit(repo, "scale_add: a faster scale", operator_files(WRONG, cases=[CASE])),
            commit(repo, "readme: another word", {"README.md": "ops and more still\n"}),
            commit(repo, "readme: a last word", {"README.md": "ops, done\n"})]
    return repo, shas


def suite_run(stack: Stack) -> int:
    """A suite run holding scale_add, as a nightly's upload would leave it (POST /ingest/report)."""
    files = {p.name: p.read_text() for p in (REPO / "examples" / "scale_add").iterdir() if p.is_file()}
    report = sim_report(files, "scale_add", verdicts={CASE: "structural_error"})
    r = stack.http.post("/ingest/report", params={"suite": "nightly", "run_key": "bisect-1"},
                        content=json.dumps(report), headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    return int(r.json()["suite_run_id"])


def test_the_revisions_run_on_the_service_and_byte_identical_ones_are_not_submitted(service, tmp_path):
    repo, shas = five(tmp_path / "repo")
    run_id = suite_run(service)
    before = {j["id"] for j in service.get("/jobs")["items"]}
    env = {**service.env, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    env.pop("CROSSCHECK_SERVER", None)
    proc = subprocess.run([sys.executable, "-m", "server.cli", "bisect", str(repo), "--op", "scale_add",
                           "--case", CASE, "--good", shas[0], "--bad", shas[4], "--server", service.url,
                           "--suite-run", str(run_id), "--json", str(tmp_path / "b.json")],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=1200, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert f"first bad commit: {shas[2]} scale_add: a faster scale" in proc.stdout.splitlines(), out

    # Two jobs on the service, one per distinct content: the good and the bad revision, labelled with them.
    new = sorted(j["id"] for j in service.get("/jobs")["items"] if j["id"] not in before)
    assert len(new) == 2, out
    good_job, bad_job = (service.get(f"/jobs/{i}") for i in new)
    assert (good_job["status"], bad_job["status"]) == ("succeeded", "failed"), (good_job, bad_job)
    labels = [service.get(f"/submissions/{j['submission_id']}")["labels"].get("commit") for j in (good_job, bad_job)]
    assert labels == [shas[0], shas[4]]

    # Each step printed as on this host, with the job that ran (or was reused for) it.
    steps = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    url = f"{service.url}/jobs/"
    assert steps[0].startswith(f"[good] {shas[0][:10]} run ") and f"[job {new[0]} {url}{new[0]}]" in steps[0]
    assert steps[1].startswith(f"[bad] {shas[4][:10]} run ") and f"[job {new[1]} {url}{new[1]}]" in steps[1]
    assert steps[2].startswith(f"[1] {shas[2][:10]} reused ") and f"[job {new[1]} " in steps[2], steps
    assert steps[3].startswith(f"[2] {shas[1][:10]} reused ") and f"[job {new[0]} " in steps[3], steps
    assert len(steps) == 4, steps

    result = json.loads((tmp_path / "b.json").read_text())
    assert result["runs_in_search"] == 0 and [s["how"] for s in result["steps"]] == ["reused", "reused"]
    assert result["after"]["cases"][CASE]["verdict"] == bad_job_verdict(service, bad_job)
    assert result["changed_files"] == ["ops/scale_add/scale_add_impl.py"]

    # The culprit is on the suite run.
    assert f"culprit attached to suite run {run_id}" in proc.stdout, out
    culprits = service.get(f"/suite-runs/{run_id}")["culprits"]
    assert [(c["operator"], c["commit"], c["metric"]) for c in culprits] == [("scale_add", shas[2], "verdict")]


def bad_job_verdict(stack: Stack, job: dict[str, Any]) -> str:
    (case,) = stack.get(f"/jobs/{job['id']}/report")["cases"]
    return str(case["verdict"])
