"""/healthz, /readyz and /metrics: no token, real dependencies."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_with_the_embedded_broker(client):
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json() == {"status": "ready"}


@pytest.mark.redis
def test_readyz_with_redis(make_app, settings):
    with TestClient(make_app(settings.model_copy(update={"broker_url": "redis://127.0.0.1:6379/15"}))) as client:
        assert client.get("/readyz").status_code == 200


def test_readyz_503_when_the_broker_is_down(make_app, settings):
    with TestClient(make_app(settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"}))) as client:
        r = client.get("/readyz")
    assert r.status_code == 503
    assert r.json()["detail"].startswith("broker: ") and "127.0.0.1:1" in r.json()["detail"]


@pytest.mark.postgres
def test_readyz_503_when_the_database_is_down(make_app, settings):
    dead = settings.model_copy(update={"database_url": "postgresql://postgres@127.0.0.1:1/test"})
    app = make_app(dead)
    client = TestClient(app)  # no lifespan: the schema check at start-up would refuse first
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["detail"].startswith("database: ")
    assert client.get("/healthz").status_code == 200


def _families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_metrics(client, hdr, seed, sim_report, broken_report):
    seed.result("scale_add", sim=sim_report)
    seed.result("missing_vec_tiles", sim=broken_report)
    seed.submit("relu", ("sim", "npu"))
    client.post("/api/v1/workers/heartbeat", headers=hdr["worker"], json={"name": "w", "host": "h"})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    fams = _families(r.text)
    jobs = {(s.labels["queue"], s.labels["status"]): s.value for s in fams["crosscheck_jobs"]}
    assert jobs[("sim", "succeeded")] == 1 and jobs[("sim", "failed")] == 1
    assert jobs[("sim", "queued")] == 1 and jobs[("npu", "awaiting_npu")] == 1 and jobs[("npu", "running")] == 0
    depth = {s.labels["queue"]: s.value for s in fams["crosscheck_queue_depth"]}
    assert depth == {"sim": 1, "npu": 1}
    hist = {(s.name, s.labels.get("le")): s.value for s in fams["crosscheck_job_duration_seconds"]
            if s.labels["queue"] == "sim"}
    assert hist[("crosscheck_job_duration_seconds_count", None)] == 2
    assert hist[("crosscheck_job_duration_seconds_bucket", "+Inf")] == 2
    assert hist[("crosscheck_job_duration_seconds_bucket", "60.0")] == 2  # seeded jobs finish at once
    assert hist[("crosscheck_job_duration_seconds_sum", None)] >= 0
    assert fams["crosscheck_workers_online"][0].value == 1
