"""worker.jobs.run_job against the real API app and real SIM runs (no Celery)."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from runtime import calculator
from tests.worker.conftest import Api
from worker import jobs
from worker.client import ApiClient, ApiUnavailable

pytestmark = pytest.mark.slow


def _graph_ok_verdict(cache: Path) -> str:
    ready, _ = calculator.status(cache)
    return "sim_garbage_graph_ok" if ready else "sim_output_unwritten"


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


def test_cancel_of_a_running_job_stops_between_cases(api: Api, make_context: Any) -> None:
    job = api.submit("scale_add")[0]
    assert jobs.run_job(make_context(CancelAfterClaim(api)), job["id"], 1) == jobs.STORED
    read = api.get(f"/jobs/{job['id']}")
    assert read["status"] == "cancelled"
    report = api.get(f"/jobs/{job['id']}/report")
    assert report["cancelled"] is True and len(report["cases"]) == 1


def test_cancelled_queued_job_is_not_claimed(api: Api, make_context: Any) -> None:
    job = api.submit("relu")[0]
    r = api.client.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert r.json()["status"] == "cancelled"
    ctx = make_context()
    assert jobs.run_job(ctx, job["id"], 1) == jobs.SKIPPED
    assert ctx.warm_parents == {}  # nothing started


def test_unreachable_api_raises_before_anything_runs(unused_port: int) -> None:
    ctx = jobs.WorkerContext(api=ApiClient(f"http://127.0.0.1:{unused_port}", "x"), name="w", cache_dir=None,
                             heartbeat_s=1.0)
    try:
        with pytest.raises(ApiUnavailable):
            jobs.run_job(ctx, 1, 1)
        assert ctx.warm_parents == {}
    finally:
        ctx.close()


def test_pack_artifacts_round_trip(tmp_path: Path) -> None:
    from runtime.report import CaseResult, Environment, Report, Submission

    evidence = tmp_path / "evidence"  # what the job's leader copied out of its job dir
    evidence.mkdir()
    (evidence / "stdout.txt").write_text("hello")
    report = Report(submission=Submission("package", "op", "0" * 64), mode="sim",
                    environment=Environment("p", "t", "3.11", "h", None),
                    cases=[CaseResult(operator="op", case="c1", evidence_dir=str(evidence))])
    data = jobs.pack_artifacts(report, tmp_path / "out")
    assert data is not None
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        assert tar.getnames() == ["000-c1/stdout.txt"]
    empty = Report(submission=report.submission, mode="sim", environment=report.environment)
    assert jobs.pack_artifacts(empty, tmp_path / "none") is None
