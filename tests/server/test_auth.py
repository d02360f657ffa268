"""Tokens: transports, anonymous reads, who submitted, OpenAPI security docs (the matrix is next door)."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from tests.signin import sign_in

API = "/api/v1"
BEAT = {"json": {"name": "w", "host": "h", "queues": ["sim"]}}

def test_every_api_route_is_documented(client):
    spec = client.get("/openapi.json").json()
    for path, ops in spec["paths"].items():
        if not path.startswith(API):
            continue
        for method, op in ops.items():
            assert op.get("tags") and op.get("summary"), f"{method} {path}"
            assert "200" in op["responses"] or "202" in op["responses"], f"{method} {path}"
    body = spec["paths"][f"{API}/submissions"]["post"]["requestBody"]["content"]
    assert set(body) == {"multipart/form-data", "application/json"}
    assert "SubmissionCreate" in spec["components"]["schemas"]
    assert "SubmissionLabels" in spec["components"]["schemas"]


@pytest.mark.parametrize("transport", ["bearer", "header", "cookie"])
def test_token_transports(client, token, transport):
    secret = token["read"]
    if transport == "cookie":
        sign_in(client, secret)
        r = client.get(f"{API}/operators")
        client.cookies.clear()
    else:
        headers = {"Authorization": f"Bearer {secret}"} if transport == "bearer" else {"X-API-Token": secret}
        r = client.get(f"{API}/operators", headers=headers)
    assert r.status_code == 200


def test_the_cookie_cannot_be_used_by_another_site(client, token, seed):
    [job_id] = seed.submit()
    sign_in(client, token["submit"])
    evil = client.post(f"{API}/jobs/{job_id}/cancel", headers={"Origin": "https://evil.example"})
    same = client.post(f"{API}/jobs/{job_id}/cancel", headers={"Origin": "http://testserver"})
    client.cookies.clear()
    assert evil.status_code == 403 and "cross-site" in evil.json()["detail"]
    assert same.status_code == 200 and same.json()["status"] == "cancelled"


def test_anonymous_read_off_by_default(client):
    assert client.get(f"{API}/operators").status_code == 401


def test_anonymous_read_lets_reads_through_and_nothing_else(make_app, settings, token, scale_add_zip):
    app = make_app(settings.model_copy(update={"anonymous_read": True}))
    with TestClient(app) as client:
        assert client.get(f"{API}/operators").status_code == 200
        assert client.get(f"{API}/cases").status_code == 200
        r = client.post(f"{API}/submissions", files={"file": ("scale_add.zip", scale_add_zip)})
        assert r.status_code == 401
        assert client.post(f"{API}/workers/heartbeat", json=BEAT["json"]).status_code == 401
        # a token that is sent must still be valid
        assert client.get(f"{API}/operators", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert client.get(f"{API}/operators", headers={"X-API-Token": token["revoked"]}).status_code == 401


def test_jobs_record_who_submitted_them(client, token, scale_add_zip):
    r = client.post(f"{API}/submissions", headers={"Authorization": f"Bearer {token['admin']}"},
                    files={"file": ("scale_add.zip", scale_add_zip)})
    job = client.get(f"{API}/jobs/{r.json()['jobs'][0]['id']}", headers={"X-API-Token": token["read"]}).json()
    assert job["submitted_by"] == "admin-bot"


def test_token_use_is_recorded(client, app, token):
    from server.models import ApiToken

    client.get(f"{API}/operators", headers={"X-API-Token": token["read"]})
    with app.state.sessionmaker() as session:
        used = {t.name: t.last_used_at for t in session.query(ApiToken)}
    assert used["read-bot"] is not None and used["submit-bot"] is None
