"""The service end to end on each backend: upload, a real Celery worker runs it, results in the DB/API.

Tests run in file order on one stack per backend; the last one kills and replaces the worker.
"""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from jobqueue import REFERENCE_PYPTO
from runtime.evidence import calculator
from tests.e2e.conftest import Stack, alive

pytestmark = pytest.mark.slow


def _graph_verdicts(cache: Path) -> tuple[str, str]:
    """(case verdict, operator verdict) of a correct kernel in SIM: graph verify ran. Never picked
    from the calculator's state, so a silently broken graph verify fails the test."""
    assert calculator.status(cache)[0], "the calculator_cache fixture builds the calculator"
    return "sim_garbage_graph_ok", "sim_garbage_graph_ok"


def test_worker_reports_its_capabilities(stack: Stack) -> None:
    full = f"e2e-{stack.name}@{socket.gethostname()}"
    worker = next(w for w in stack.get("/workers")["items"] if w["name"] == full)
    # The plain queue (jobs asking for no version) and its own version's queue: it has the reference pypto.
    assert sorted(worker["queues"]) == ["sim", f"sim@{REFERENCE_PYPTO}"]
    caps = worker["capabilities"]
    assert caps["modes"] == ["sim"] and caps["devices"] == []
    assert caps["versions"]["pypto"] == "0.2.0" and caps["versions"]["torch"].startswith("2.13.0")
    assert calculator.status(Path(stack.env["CACHE_DIR"]))[0]
    assert caps["graph_verify"] == "ready"


def test_correct_and_broken_kernels(stack: Stack) -> None:
    good = stack.submit("scale_add")[0]
    bad = stack.submit("missing_vec_tiles")[0]
    good_job, bad_job = stack.wait_job(good["id"]), stack.wait_job(bad["id"])
    case_verdict, operator_verdict = _graph_verdicts(Path(stack.env["CACHE_DIR"]))

    assert good_job["status"] == "succeeded", good_job
    assert good_job["worker"].startswith(f"e2e-{stack.name}@")
    report = stack.get(f"/jobs/{good['id']}/report")
    assert [c["verdict"] for c in report["cases"]] == [case_verdict, case_verdict]
    artifacts = [a["path"] for a in stack.get(f"/jobs/{good['id']}/artifacts")["items"]]
    assert any(p.endswith("stdout.txt") for p in artifacts), artifacts
    assert any(p.endswith("_simulate.swim.json") for p in artifacts), artifacts

    assert bad_job["status"] == "failed", bad_job
    case = stack.get(f"/jobs/{bad['id']}/report")["cases"][0]
    assert case["verdict"] == "structural_error"
    assert case["diagnosis"] and case["diagnosis"][0]["rule"] == "vec-tile-shape-not-set"

    operators = {o["name"]: o for o in stack.get("/operators")["items"]}
    assert operators["scale_add"]["combined_verdict"] == operator_verdict
    assert operators["missing_vec_tiles"]["combined_verdict"] == "structural_error"


def test_cancel_a_queued_job(stack: Stack) -> None:
    # No NPU worker is online on this host, so the job waits as awaiting_npu until cancelled.
    job = stack.submit("relu", modes=("npu",))[0]
    queued = stack.get(f"/jobs/{job['id']}")
    assert queued["status"] == "awaiting_npu" and queued["queue_position"] == 1
    assert stack.post(f"/jobs/{job['id']}/cancel")["status"] == "cancelled"
    assert stack.get(f"/jobs/{job['id']}")["status"] == "cancelled"


def test_killed_worker_job_is_requeued_and_completes(stack: Stack) -> None:
    job = stack.submit("dynamic_add")[0]  # three cases: several seconds of running to interrupt
    running = stack.wait_job(job["id"], ("running",) + ("succeeded", "failed", "error"))
    assert running["status"] == "running", f"the job finished before the worker could be killed: {running}"
    tree = stack.kill_worker(stack.workers[-1])
    stack.wait(lambda: not [pid for pid in tree if alive(pid)], 30, f"the killed worker's processes {tree} to go")
    stack.start_worker(f"e2e-{stack.name}-2")
    done = stack.wait_job(job["id"])
    assert done["status"] == "succeeded", done
    assert done["attempts"] == 2  # the stale sweep re-queued it as a new attempt
    assert done["worker"].startswith(f"e2e-{stack.name}-2@")
