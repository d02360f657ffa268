"""NPU workers end to end: real API, real broker, real Celery workers, real runtime, and the torch_npu
test double (tests/npu_double/) in place of the cards, failing on command (507018 on card 3, a hang on
card 5). Nothing here is NPU evidence: the double runs no kernel, and every result says test double.
"""
from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.e2e.conftest import START_DEADLINE_S, Stack

pytestmark = pytest.mark.slow
DOUBLE = REPO / "tests" / "npu_double"


def test_a_sim_only_worker_never_takes_an_npu_job(stack: Stack) -> None:
    """With no NPU worker online, the npu job waits as awaiting_npu while the SIM worker runs the SIM job."""
    sim, npu = stack.submit("relu", modes=("sim", "npu"))
    assert stack.get(f"/jobs/{npu['id']}")["status"] == "awaiting_npu"
    stack.wait_job(sim["id"])
    read = stack.get(f"/jobs/{npu['id']}")
    assert (read["status"], read["worker"], read["queue_position"]) == ("awaiting_npu", None, 1)
    workers = stack.get("/workers")["items"]
    assert all("npu" not in w["capabilities"]["modes"] for w in workers)
    assert stack.post(f"/jobs/{npu['id']}/cancel")["status"] == "cancelled"  # later NPU workers must not get it


@pytest.fixture(scope="module")
def npu_stack(sqlite_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack("npu-double", dict(sqlite_env, CASE_TIMEOUT_S="20"), tmp_path_factory.mktemp("logs-npu"))
    try:
        s.start_api()
        yield s
    finally:
        s.stop()


def start_npu_worker(stack: Stack, name: str, devices: str, state: Path) -> subprocess.Popen[bytes]:
    env = dict(stack.env, CROSSCHECK_NPU_TEST_DOUBLE=str(DOUBLE), ASCEND_HOME_PATH=str(DOUBLE / "cann"),
               PYTHONPATH=f"{DOUBLE}:{REPO}", NPU_DOUBLE_FAULTS="3:507018,5:hang", NPU_QUARANTINE_AFTER="2",
               NPU_STATE_DIR=str(state))
    cmd = [sys.executable, "-m", "server.cli", "worker", "--queues", "npu", "--devices", devices, "--name", name]
    proc = stack._spawn(cmd, f"worker-{name}.log", env)
    stack.workers.append(proc)
    full = f"{name}@{socket.gethostname()}"

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"worker {name} exited: {(stack.logs / f'worker-{name}.log').read_text()[-3000:]}")
        return any(w["name"] == full and w["online"] and w["capabilities"].get("cards")
                   for w in stack.get("/workers")["items"])

    stack.wait(ready, START_DEADLINE_S, f"worker {name} to report its cards", stack.logs / f"worker-{name}.log")
    return proc


def cards_of(stack: Stack, name: str) -> dict[int, dict[str, Any]]:
    worker = next(w for w in stack.get("/workers")["items"] if w["name"].startswith(name + "@"))
    return {c["device"]: c for c in worker["capabilities"]["cards"]}


def run_npu(stack: Stack) -> tuple[dict[str, Any], dict[str, Any]]:
    [job] = stack.submit("relu", modes=("npu",))
    done = stack.wait_job(job["id"])
    return done, stack.get(f"/jobs/{job['id']}/report")


def test_a_failing_card_is_retried_around_then_quarantined_then_released(npu_stack: Stack,
                                                                          tmp_path: Path) -> None:
    start_npu_worker(npu_stack, "npu-a", "3,4", tmp_path / "state")
    assert set(cards_of(npu_stack, "npu-a")) == {3, 4}
    for round_ in (1, 2):
        job, report = run_npu(npu_stack)
        npu = report["environment"]["npu"]
        assert npu["test_double"] is True and npu["device_id"] == 4
        first, second = npu["attempts"]
        assert (first["device_id"], first["rule"], first["counted_against_card"]) == (3, "npu-driver-cann-too-old", True)
        assert second == {"device_id": 4, "outcome": "ok"}
        # the double runs no kernel: never a precision verdict
        assert {c["verdict"] for c in report["cases"]} == {"structural_error"}
        assert all(c["precision"] == "not_applicable" for c in report["cases"])
    assert job["status"] == "failed"
    npu_stack.wait(lambda: cards_of(npu_stack, "npu-a")[3]["state"] == "quarantined", 30, "card 3 quarantined")
    card = cards_of(npu_stack, "npu-a")[3]
    assert card["failures_in_row"] == 2 and card["last_failure"]["job_id"] == job["id"]
    page = npu_stack.http.get(npu_stack.url + "/workers").text
    assert "quarantined" in page and "test double" in page
    # quarantined: the next job goes straight to card 4
    _, report = run_npu(npu_stack)
    assert report["environment"]["npu"]["attempts"] == [{"device_id": 4, "outcome": "ok"}]
    # an admin releases it; the worker takes it back at its next heartbeat
    worker = next(w["name"] for w in npu_stack.get("/workers")["items"] if w["name"].startswith("npu-a@"))
    assert npu_stack.post(f"/workers/{worker}/cards/3/release")["release"] == 1
    npu_stack.wait(lambda: cards_of(npu_stack, "npu-a")[3]["state"] == "free", 30, "card 3 released")
    assert cards_of(npu_stack, "npu-a")[3]["failures_in_row"] == 0


def test_a_hanging_card_costs_a_timeout_then_the_job_moves(npu_stack: Stack, tmp_path: Path) -> None:
    for proc in list(npu_stack.workers):  # only the hanging pair serves npu jobs now
        npu_stack.kill_worker(proc)
        npu_stack.workers.remove(proc)
    start_npu_worker(npu_stack, "npu-b", "5,6", tmp_path / "state")
    _, report = run_npu(npu_stack)
    first, second = report["environment"]["npu"]["attempts"]
    assert (first["device_id"], first["rule"], first["counted_against_card"]) == (5, "hang", True)
    assert second == {"device_id": 6, "outcome": "ok"} and report["environment"]["npu"]["device_id"] == 6
    npu_stack.wait(lambda: cards_of(npu_stack, "npu-b")[5]["failures_in_row"] == 1, 30,
                   "the heartbeat to count the hang against card 5")
