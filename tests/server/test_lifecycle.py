"""The job lifecycle through the API: claim, bundle, heartbeat, result, cancel, retry; workers."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

API = "/api/v1"
INTERNAL = f"{API}/internal/jobs"


def claim(client, hdr, job_id, attempt=1, worker="w1"):
    return client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker"], json={"worker": worker, "attempt": attempt})


def send_result(client, hdr, job_id, attempt=1, report=None, **fields):
    data = {"attempt": str(attempt), **{k: v for k, v in fields.items() if k != "artifacts"}}
    if report is not None:
        data["report"] = json.dumps(report)
    files = {"artifacts": ("a.tar.gz", fields["artifacts"])} if "artifacts" in fields else None
    return client.post(f"{INTERNAL}/{job_id}/result", headers=hdr["worker"], data=data, files=files)


def tarball(entries: list[tuple[str, bytes | None, str]]) -> bytes:
    """(name, data, kind) with kind file | dir | symlink | hardlink."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, kind in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                         "fifo": tarfile.FIFOTYPE}[kind]
            info.linkname = "/etc/passwd" if kind in ("symlink", "hardlink") else ""
            tar.addfile(info)
    return buf.getvalue()


@pytest.fixture
def job_id(seed) -> int:
    return seed.submit("scale_add", ("sim",))[0]


def test_claim_is_a_compare_and_set(client, hdr, job_id, settings):
    first = claim(client, hdr, job_id)
    assert first.status_code == 200, first.text
    job = first.json()["job"]
    assert first.json()["claimed"] is True
    assert (job["id"], job["mode"], job["attempt"], job["operator"]) == (job_id, "sim", 1, "scale_add")
    assert (job["case_timeout_s"], job["case_memory_gib"]) == (settings.case_timeout_s, settings.case_memory_gib)
    assert job["submission"]["kind"] == "package" and job["submission"]["filename"] == "scale_add.zip"
    second = claim(client, hdr, job_id, worker="w2")
    assert second.status_code == 409
    assert "not claimable" in second.json()["detail"] and "running" in second.json()["detail"]
    state = client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()
    assert state["status"] == "running" and state["worker"] == "w1"


def test_claim_of_a_wrong_attempt_or_unknown_job(client, hdr, job_id):
    assert claim(client, hdr, job_id, attempt=2).status_code == 409
    assert claim(client, hdr, 999).status_code == 404
    r = client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker"], json={"worker": "", "attempt": 0})
    assert r.status_code == 422 and "body.worker" in r.json()["detail"] and "body.attempt" in r.json()["detail"]


def test_bundle_download(client, hdr, job_id):
    job = claim(client, hdr, job_id).json()["job"]
    r = client.get(f"{INTERNAL}/{job_id}/bundle", headers=hdr["worker"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    assert r.headers["x-filename"] == "scale_add.zip"
    assert hashlib.sha256(r.content).hexdigest() == job["submission"]["sha256"]


def test_heartbeat_records_progress_and_reports_cancel(client, hdr, job_id):
    claim(client, hdr, job_id)
    url = f"{INTERNAL}/{job_id}/heartbeat"
    r = client.post(url, headers=hdr["worker"], json={"attempt": 1, "progress": {"case": 1, "of": 2}})
    assert r.json() == {"cancel_requested": False}
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()["progress"] == {"case": 1, "of": 2}
    assert client.post(f"{API}/jobs/{job_id}/cancel", headers=hdr["submit"]).json()["cancel_requested"] is True
    assert client.post(url, headers=hdr["worker"], json={"attempt": 1}).json() == {"cancel_requested": True}


def test_heartbeat_of_a_stale_attempt_is_409(client, hdr, job_id):
    url = f"{INTERNAL}/{job_id}/heartbeat"
    assert client.post(url, headers=hdr["worker"], json={"attempt": 1}).status_code == 409  # still queued
    claim(client, hdr, job_id)
    assert client.post(url, headers=hdr["worker"], json={"attempt": 2}).status_code == 409
    assert client.post(f"{INTERNAL}/999/heartbeat", headers=hdr["worker"], json={"attempt": 1}).status_code == 404


def test_result_is_stored_once(client, hdr, job_id, sim_report):
    claim(client, hdr, job_id)
    artifacts = tarball([("plog/pypto.log", b"plog text", "file"), ("output", None, "dir")])
    first = send_result(client, hdr, job_id, report=sim_report, artifacts=artifacts)
    assert first.status_code == 200 and first.json() == {"stored": True}
    again = send_result(client, hdr, job_id, report=sim_report, artifacts=artifacts)
    assert again.status_code == 200 and again.json() == {"stored": False}
    job = client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()
    assert job["status"] == "succeeded" and job["case_count"] == 2
    paths = [a["path"] for a in client.get(f"{API}/jobs/{job_id}/artifacts", headers=hdr["read"]).json()["items"]]
    assert paths == ["artifacts-attempt1/plog/pypto.log", "report-attempt1.json"]
    r = client.get(f"{API}/jobs/{job_id}/artifacts/artifacts-attempt1/plog/pypto.log", headers=hdr["read"])
    assert r.content == b"plog text"


def test_report_can_come_as_a_file_part(client, hdr, job_id, sim_report):
    claim(client, hdr, job_id)
    r = client.post(f"{INTERNAL}/{job_id}/result", headers=hdr["worker"], data={"attempt": "1"},
                    files={"report": ("report.json", json.dumps(sim_report).encode(), "application/json")})
    assert r.json() == {"stored": True}


def test_result_of_a_stale_attempt_is_ignored(client, hdr, job_id, sim_report):
    claim(client, hdr, job_id)
    r = send_result(client, hdr, job_id, attempt=2, report=sim_report)
    assert r.status_code == 200 and r.json() == {"stored": False}
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()["status"] == "running"


def test_error_and_cancelled_results(client, hdr, seed):
    errored, cancelled = seed.submit("scale_add", ("sim", "npu"))
    for job in (errored, cancelled):
        claim(client, hdr, job)
    assert send_result(client, hdr, errored, error="no NPU on this host").json() == {"stored": True}
    assert send_result(client, hdr, cancelled, cancelled="true").json() == {"stored": True}
    e = client.get(f"{API}/jobs/{errored}", headers=hdr["read"]).json()
    c = client.get(f"{API}/jobs/{cancelled}", headers=hdr["read"]).json()
    assert (e["status"], e["error"]) == ("error", "no NPU on this host")
    assert c["status"] == "cancelled"


@pytest.mark.parametrize(("entries", "problem"), [
    ([("../../escape.txt", b"x", "file")], "escapes the folder"),
    ([("ok/../../escape.txt", b"x", "file")], "escapes the folder"),
    ([("/etc/cron.d/x", b"x", "file")], "escapes the folder"),
    ([("link", None, "symlink")], "is a link"),
    ([("hard", None, "hardlink")], "is a link"),
    ([("pipe", None, "fifo")], "not a regular file"),
])
def test_unsafe_artifacts_are_rejected_and_nothing_is_stored(client, hdr, job_id, sim_report, settings, entries,
                                                             problem):
    claim(client, hdr, job_id)
    r = send_result(client, hdr, job_id, report=sim_report, artifacts=tarball(entries))
    assert r.status_code == 422 and problem in r.json()["detail"]
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()["status"] == "running"
    assert not (settings.data_dir.parent / "escape.txt").exists()
    assert client.get(f"{API}/jobs/{job_id}/artifacts", headers=hdr["read"]).json()["items"] == []


@pytest.mark.parametrize(("fields", "problem"), [
    ({"attempt": "x"}, "'attempt' must be a positive integer"),
    ({"attempt": "1", "report": "{nope"}, "report is not JSON"),
    ({"attempt": "1", "report": "[1]"}, "report must be a JSON object"),
    ({"attempt": "1", "report": json.dumps({"schema_version": 99, "cases": []})}, "schema_version must be 1"),
    ({"attempt": "1", "report": json.dumps({"schema_version": 1, "cases": [{"case": "a"}]})}, "Field required"),
])
def test_bad_results_are_422(client, hdr, job_id, fields, problem):
    claim(client, hdr, job_id)
    r = client.post(f"{INTERNAL}/{job_id}/result", headers=hdr["worker"], data=fields)
    assert r.status_code == 422 and problem in r.json()["detail"]


@pytest.mark.parametrize(("change", "problem"), [
    (lambda c: c.pop("operator"), "report.cases[0].operator: Field required"),
    (lambda c: c.update(verdict="fine"), "report.cases[0].verdict: Value error, 'fine' is not a known verdict"),
    (lambda c: c.update(metrics={"numel": 2048, "mismatch_count": 1857, "mismatch_ratio": 0.0}),
     "report.cases[0].metrics: Value error, mismatch_ratio 0.0 disagrees with mismatch_count/numel = 1857/2048"),
    (lambda c: c.update(metrics={"numel": 2048, "mismatch_count": 4096, "mismatch_ratio": 1.0}),
     "report.cases[0].metrics: Value error, mismatch_count 4096 is larger than numel 2048"),
    (lambda c: c.update(outputs=[{"name": "y", "metrics": {"numel": 4, "nan_count": 9}}]),
     "report.cases[0].outputs: Value error, outputs[0].metrics: nan_count 9 is larger than numel 4"),
])
def test_an_impossible_report_is_422_naming_the_field(client, hdr, job_id, sim_report, change, problem):
    claim(client, hdr, job_id)
    change(sim_report["cases"][0])
    r = send_result(client, hdr, job_id, report=sim_report)
    assert r.status_code == 422 and problem in r.json()["detail"], r.text
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()["status"] == "running"


def test_not_a_tarball_is_422(client, hdr, job_id, sim_report):
    claim(client, hdr, job_id)
    r = send_result(client, hdr, job_id, report=sim_report, artifacts=b"plain bytes")
    assert r.status_code == 422 and "readable .tar.gz" in r.json()["detail"]


def test_cancel_a_queued_job_and_then_a_finished_one(client, hdr, job_id):
    r = client.post(f"{API}/jobs/{job_id}/cancel", headers=hdr["submit"])
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["queue_position"] is None
    again = client.post(f"{API}/jobs/{job_id}/cancel", headers=hdr["submit"])
    assert again.status_code == 409 and "already finished" in again.json()["detail"]
    assert claim(client, hdr, job_id).status_code == 409  # the broker's message finds nothing to run
    assert client.post(f"{API}/jobs/999/cancel", headers=hdr["submit"]).status_code == 404


def test_retry_only_finished_jobs_and_enqueue_the_new_attempt(client, hdr, job_id, sim_report, messages):
    r = client.post(f"{API}/jobs/{job_id}/retry", headers=hdr["submit"])
    assert r.status_code == 409 and "only finished jobs" in r.json()["detail"]
    claim(client, hdr, job_id)
    send_result(client, hdr, job_id, report=sim_report)
    r = client.post(f"{API}/jobs/{job_id}/retry", headers=hdr["submit"])
    assert r.status_code == 200
    job = r.json()
    assert (job["status"], job["attempts"], job["worker"], job["queue_position"]) == ("queued", 2, None, 1)
    assert messages()[-1]["args"] == [job_id, 2]
    assert claim(client, hdr, job_id, attempt=1).status_code == 409  # the old attempt's message
    assert claim(client, hdr, job_id, attempt=2).status_code == 200


def test_queue_position(client, hdr, seed):
    ids = [seed.submit("scale_add", ("npu",))[0] for _ in range(3)]
    positions = [client.get(f"{API}/jobs/{i}", headers=hdr["read"]).json()["queue_position"] for i in ids]
    assert positions == [1, 2, 3]
    claim(client, hdr, ids[0])
    assert client.get(f"{API}/jobs/{ids[2]}", headers=hdr["read"]).json()["queue_position"] == 2


def test_worker_heartbeat_upserts_and_lists_online(client, hdr, app):
    beat = {"name": "npu-box-1", "host": "npu-box", "queues": ["npu"],
            "capabilities": {"modes": ["npu"], "devices": [0, 1], "versions": {"pypto": "0.2.0"}}}
    r = client.post(f"{API}/workers/heartbeat", headers=hdr["worker"], json=beat)
    assert r.status_code == 200 and r.json()["online"] is True
    client.post(f"{API}/workers/heartbeat", headers=hdr["worker"], json={**beat, "current_job_id": 7, "jobs_done": 3})
    [w] = client.get(f"{API}/workers", headers=hdr["read"]).json()["items"]
    assert (w["name"], w["queues"], w["current_job_id"], w["jobs_done"], w["online"]) == ("npu-box-1", ["npu"], 7, 3,
                                                                                        True)
    assert w["capabilities"]["devices"] == [0, 1]
    from datetime import timedelta

    from server.models import Worker
    from server.models.base import utcnow

    with app.state.sessionmaker.begin() as session:  # a worker silent for 3 heartbeats is offline
        session.get(Worker, "npu-box-1").last_heartbeat = utcnow() - timedelta(seconds=31)
    [w] = client.get(f"{API}/workers", headers=hdr["read"]).json()["items"]
    assert w["online"] is False
