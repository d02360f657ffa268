"""A claimed job answers only to the token that claimed it; worker names are bound to their token;
stale workers can be removed; the audit log records who did what."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from server.models import CaseResult, Job, Worker
from server.models.base import utcnow
from server.services import tokens
from tests.server.test_lifecycle import API, INTERNAL, claim, send_result


@pytest.fixture
def other(app) -> dict[str, str]:
    """A second worker token: another tenant's worker, or a leaked token."""
    with app.state.sessionmaker.begin() as session:
        return {"Authorization": f"Bearer {tokens.create(session, 'other-worker', ['worker'])[1]}"}


@pytest.fixture
def job_id(seed) -> int:
    return seed.submit("scale_add", ("sim",))[0]


def beat(client, headers, name):
    return client.post(f"{API}/workers/heartbeat", headers=headers, json={"name": name, "host": "h", "queues": ["sim"]})


def test_only_the_claimant_may_fetch_keep_alive_or_post_for_a_job(app, client, hdr, other, job_id, sim_report):
    assert client.get(f"{INTERNAL}/{job_id}/bundle", headers=other).status_code == 403  # not claimed yet
    assert claim(client, hdr, job_id).status_code == 200
    r = client.get(f"{INTERNAL}/{job_id}/bundle", headers=other)
    assert r.status_code == 403 and "claim" in r.json()["detail"]
    assert client.post(f"{INTERNAL}/{job_id}/heartbeat", headers=other, json={"attempt": 1}).status_code == 403
    forged = {**sim_report, "cases": [{**c, "verdict": "pass"} for c in sim_report["cases"]]}
    r = client.post(f"{INTERNAL}/{job_id}/result", headers=other, data={"attempt": "1", "report": _json(forged)})
    assert r.status_code == 403 and "claimed by another worker's token" in r.json()["detail"]
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["read"]).json()["status"] == "running"
    assert client.get(f"{INTERNAL}/{job_id}/bundle", headers=hdr["worker"]).status_code == 200
    assert send_result(client, hdr, job_id, report=sim_report).json() == {"stored": True}
    with app.state.sessionmaker() as session:
        worker_token = tokens.verify(session, hdr["worker"]["Authorization"].split()[1])
        rows = list(session.scalars(select(CaseResult).where(CaseResult.job_id == job_id)))
        job = session.get(Job, job_id)
        assert rows and {(r.token_id, r.source_name) for r in rows} == {(worker_token.id, "w1")}
        assert job.claim_token_id == worker_token.id and "pass" not in {r.verdict for r in rows}


def test_a_worker_name_is_bound_to_its_token_while_online(app, client, hdr, other, job_id):
    assert beat(client, hdr["worker"], "w1").status_code == 200
    r = beat(client, other, "w1")
    assert r.status_code == 403 and "registered with another token" in r.json()["detail"]
    r = client.post(f"{INTERNAL}/{job_id}/claim", headers=other, json={"worker": "w1", "attempt": 1})
    assert r.status_code == 403
    with app.state.sessionmaker.begin() as session:  # the first token is revoked: the name is free again
        tokens.revoke(session, tokens.verify(session, hdr["worker"]["Authorization"].split()[1]).id)
    assert beat(client, other, "w1").status_code == 200


def test_an_offline_worker_may_be_taken_over_and_removed(app, client, hdr, other):
    assert beat(client, hdr["worker"], "w-old").status_code == 200
    r = client.delete(f"{API}/workers/w-old", headers=hdr["admin"])
    assert r.status_code == 409 and "online" in r.json()["detail"]
    with app.state.sessionmaker.begin() as session:
        session.get(Worker, "w-old").last_heartbeat = utcnow() - timedelta(hours=1)
    assert client.delete(f"{API}/workers/w-old", headers=hdr["admin"]).json() == {"removed": "w-old"}
    assert client.delete(f"{API}/workers/w-old", headers=hdr["admin"]).status_code == 404
    assert "w-old" not in [w["name"] for w in client.get(f"{API}/workers", headers=hdr["read"]).json()["items"]]


def test_the_audit_log_records_who_did_what(app, client, hdr, scale_add_zip):
    r = client.post(f"{API}/submissions", headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)})
    job_id = r.json()["jobs"][0]["id"]
    client.post(f"{API}/jobs/{job_id}/cancel", headers=hdr["submit"])
    client.post(f"{API}/jobs/{job_id}/retry", headers=hdr["admin"])
    with app.state.sessionmaker.begin() as session:
        made, _ = tokens.create(session, "ci-new", ["submit"])
        tokens.revoke(session, made.id)
    events = client.get(f"{API}/audit", headers=hdr["admin"]).json()["items"]
    seen = [(e["action"], e["actor"], e["target"]) for e in events]
    assert ("submission.create", "submit-bot", f"submission {r.json()['submission_id']}") in seen
    assert ("job.cancel", "submit-bot", f"job {job_id}") in seen
    assert ("job.retry", "admin-bot", f"job {job_id}") in seen
    assert ("token.create", "cli", f"token {made.id}") in seen and ("token.revoke", "cli", f"token {made.id}") in seen
    assert [e["id"] for e in events] == sorted((e["id"] for e in events), reverse=True)
    page = client.get(f"{API}/audit", headers=hdr["admin"], params={"limit": 2}).json()
    rest = client.get(f"{API}/audit", headers=hdr["admin"], params={"before": page["next_before"]}).json()["items"]
    assert [e["id"] for e in page["items"] + rest] == [e["id"] for e in events]
    assert client.get(f"{API}/audit", headers=hdr["submit"]).status_code == 403


def _json(value) -> str:
    import json

    return json.dumps(value)


def test_a_bundle_is_downloadable_by_its_submitter_and_admins_only(app, client, hdr, scale_add_zip):
    with app.state.sessionmaker.begin() as session:
        tenant = {"Authorization": f"Bearer {tokens.create(session, 'other-tenant', ['submit'])[1]}"}
    r = client.post(f"{API}/submissions", headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)})
    url = f"{API}/submissions/{r.json()['submission_id']}/bundle"
    assert client.get(url, headers=hdr["submit"]).content == scale_add_zip
    assert client.get(url, headers=hdr["admin"]).content == scale_add_zip
    for other in (tenant, hdr["read"], hdr["worker"]):
        denied = client.get(url, headers=other)
        assert denied.status_code in (403,) and b"PK" not in denied.content
