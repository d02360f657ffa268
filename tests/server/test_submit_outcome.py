"""`crosscheck submit --wait`: each finished job's exit code and words (runtime/exit_codes.py)."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from client.submit import Server, job_outcome, _state, unserved
from server.migrate import upgrade
from server.models.base import utcnow
from server.services import tokens, workers
from tests.web.conftest import make_app, make_settings


def job(status: str, mode: str = "sim", error: str | None = None) -> dict:
    return {"id": 7, "mode": mode, "status": status, "error": error, "queue": mode}


def report(*verdicts: str, mode: str = "sim") -> dict:
    return {"mode": mode, "cases": [{"verdict": v, "stage": "compare"} for v in verdicts]}


def test_a_wrong_kernel_is_a_kernel_defect_in_words_not_failed() -> None:
    code, words = job_outcome(job("failed"), report("graph_fail", "graph_fail"))
    assert code == 1 and words == "kernel defect ×2 (graph fail ×2)"
    assert "failed" not in _state(job("failed")).split(";")[0]  # "finished: the job ran; ..."


def test_acceptable_and_infrastructure_outcomes() -> None:
    assert job_outcome(job("succeeded"), report("sim_garbage_graph_ok"))[0] == 0
    code, words = job_outcome(job("expired", "npu", "no NPU worker came online within 24 h"), None)
    assert code == 3 and words.startswith("no online worker serves npu")
    assert job_outcome(job("error", error="worker lost"), None) == (3, "infrastructure: worker lost")
    assert job_outcome(job("cancelled"), None)[0] == 3


def test_a_failed_golden_is_unusable_input() -> None:
    rep = {"mode": "sim", "cases": [{"verdict": "not_run", "stage": "golden"}]}
    assert job_outcome(job("failed"), rep)[0] == 2


def test_submit_warns_when_no_online_worker_serves_a_mode(tmp_path: Path) -> None:
    """Against the real app and a migrated SQLite file: a SIM worker is online, the NPU one went quiet."""
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        workers.heartbeat(session, "sim-1@vm", "vm", ["sim"], {"modes": ["sim"]}, None, 0)
        old = workers.heartbeat(session, "npu-1@box", "box", ["npu"], {"modes": ["npu"]}, None, 0)
        old.last_heartbeat = utcnow() - timedelta(hours=5)
        secret = tokens.create(session, "reader", ["read"])[1]
        session.commit()
    with TestClient(app, headers={"X-API-Token": secret}) as http:
        lines = unserved(Server(http, "http://testserver"), ["sim", "npu"])
    app.state.engine.dispose()
    assert lines == ["no online worker serves npu: one was last seen 5 h ago; NPU jobs wait until one comes online"]
