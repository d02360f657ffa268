"""worker.jobs.run_job against the real API app and real SIM runs (no Celery)."""
from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest

from runtime.evidence import calculator
from tests.worker.conftest import Api
from worker import jobs
from worker.client import ApiClient, ApiUnavailable

pytestmark = pytest.mark.slow


def _graph_ok_verdict(cache: Path) -> str:
    """A correct kernel's SIM verdict: graph verify ran. Never picked from the calculator's state,
    so a silently broken graph verify fails the test."""
    assert calculator.status(cache)[0], "the calculator_cache fixture builds the calculator"
    return "sim_garbage_graph_ok"


def test_scale_add_job_is_stored_with_verdicts_and_artifacts(api: Api, make_context: Any,
                                                              calculator_cache: Path) -> None:
    job = api.submit("scale_add")[0]
    ctx = make_context()
    assert jobs.run_job(ctx, job["id"], 1) == jobs.STORED
    read = api.get(f"/jobs/{job['id']}")
    assert read["status"] == "succeeded"
    assert read["worker"] == "test-worker@host"
    assert read["progress"]["done"] == read["progress"]["total"] == 2
    report = api.get(f"/jobs/{job['id']}/report")
    assert {c["verdict"] for c in report["cases"]} == {_graph_ok_verdict(calculator_cache)}
    listed = [a["path"] for a in api.get(f"/jobs/{job['id']}/artifacts")["items"]]
    assert any(p.endswith("stdout.txt") for p in listed), listed
    assert any("_simulate.swim.json" in p for p in listed), listed
    # The same delivery again (acks_late redelivery): the claim refuses it, nothing runs.
    assert jobs.run_job(ctx, job["id"], 1) == jobs.SKIPPED
    assert ctx.warm("sim").starts == 1  # one warm parent served the job (and would serve the next)


def test_structural_error_is_a_result_not_an_exception(api: Api, make_context: Any) -> None:
    job = api.submit("missing_vec_tiles")[0]
    assert jobs.run_job(make_context(), job["id"], 1) == jobs.STORED
    assert api.get(f"/jobs/{job['id']}")["status"] == "failed"
    case = api.get(f"/jobs/{job['id']}/report")["cases"][0]
    assert case["verdict"] == "structural_error"
    assert case["diagnosis"][0]["rule"] == "vec-tile-shape-not-set"


def test_npu_job_on_a_cpu_host_ends_in_error_with_the_runtime_message(api: Api, make_context: Any) -> None:
    job = api.submit("relu", modes=("npu",))[0]
    assert jobs.run_job(make_context(), job["id"], 1) == jobs.STORED
    read = api.get(f"/jobs/{job['id']}")
    assert read["status"] == "error"
    assert read["error"].startswith("no NPU on this host: torch_npu/CANN not found (")


class CancelAfterClaim(ApiClient):
    """A user presses cancel right after the worker claimed the job (through the real API)."""

    def __init__(self, api: Api):
        super().__init__(api.url, api.worker)
        self.user = api

    def claim(self, job_id: int, worker: str, attempt: int) -> dict[str, Any] | None:
        job = super().claim(job_id, worker, attempt)
        r = self.user.client.post(f"/api/v1/jobs/{job_id}/cancel")
        assert r.status_code == 200, r.text
        return job


def test_cancel_right_after_the_claim_runs_no_case(api: Api, make_context: Any) -> None:
    job = api.submit("scale_add")[0]
    assert jobs.run_job(make_context(CancelAfterClaim(api)), job["id"], 1) == jobs.STORED
    read = api.get(f"/jobs/{job['id']}")
    assert read["status"] == "cancelled"
    report = api.get(f"/jobs/{job['id']}/report")
    assert report["cancelled"] is True and len(report["cases"]) < 2  # scale_add has 2; at most the first ran


class CancelOnceRunning(ApiClient):
    """A user presses cancel once the job's case is running (through the real API): the case says
    so on its stdout, in the worker's job dir."""

    def __init__(self, api: Api):
        super().__init__(api.url, api.worker)
        self.user, self.sent = api, False

    def heartbeat(self, job_id: int, attempt: int, progress: dict[str, Any] | None = None) -> bool:
        outputs = Path(tempfile.gettempdir()).glob(f"crosscheck-job{job_id}-*/work/jobs/*/stdout.txt")
        if not self.sent and any("SPINNING" in p.read_text() for p in outputs):
            r = self.user.client.post(f"/api/v1/jobs/{job_id}/cancel")
            assert r.status_code == 200, r.text
            self.sent = True
        return super().heartbeat(job_id, attempt, progress)


@pytest.mark.slow
def test_cancel_kills_the_running_case(api: Api, make_context: Any, tmp_path: Path) -> None:
    # The case would spin until its 120 s timeout; the cancel must kill it, and the job end cancelled.
    from client.submit import bundle

    filename, data = bundle(_spinning_package(tmp_path / "spin"))
    r = api.client.post("/api/v1/submissions", data={"modes": ["sim"]}, files={"file": (filename, data)})
    assert r.status_code == 202, r.text
    job = r.json()["jobs"][0]
    assert jobs.run_job(make_context(CancelOnceRunning(api)), job["id"], 1) == jobs.STORED
    read = api.get(f"/jobs/{job['id']}")
    assert read["status"] == "cancelled", read
    report = api.get(f"/jobs/{job['id']}/report")
    assert report["cancelled"] is True and report["cases"] == []  # killed mid-case: no verdict for it


def _spinning_package(root: Path) -> Path:
    import json

    root.mkdir(parents=True)
    (root / "test_cases.json").write_text(json.dumps({"op_name": "spin", "test_cases": [
        {"id": "c1", "seed": 1, "input": {"shape": [4, 4], "dtype": "float32"}}]}))
    (root / "spin_impl.py").write_text("def spin_wrapper(x):\n    print('SPINNING', flush=True)\n"
                                       "    while True:\n        pass\n")
    (root / "spin_golden.py").write_text("def spin_golden(x):\n    return x\n")
    return root
