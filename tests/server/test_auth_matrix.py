"""The auth matrix: every endpoint x every kind of token (one app for the module: it is read-mostly)."""
from __future__ import annotations

import json
import uuid

import pytest

API = "/api/v1"
SUBMISSION = {"json": {"files": {"kernel.py": "import pypto\n"}}}
RESULT = {"data": {"attempt": "1", "report": json.dumps({"schema_version": 1, "cases": []})}}
CULPRIT = {"json": {"items": [{"operator": "scale_add", "commit": "a" * 40}]}}
BEAT = {"json": {"name": "w", "host": "h", "queues": ["sim"]}}

# (method, path, scope needed, request kwargs). None = no token needed.
ENDPOINTS = [
    ("POST", "/submissions", "submit", SUBMISSION),
    ("GET", "/submissions/{submission_id}", "read", {}),
    ("GET", "/submissions/{submission_id}/bundle", "read", {}),
    ("GET", "/jobs", "read", {}),
    ("GET", "/jobs/{job_id}", "read", {}),
    ("GET", "/jobs/{job_id}/report", "read", {}),
    ("GET", "/jobs/{job_id}/logs", "read", {}),
    ("GET", "/jobs/{job_id}/artifacts", "read", {}),
    ("GET", "/jobs/{job_id}/artifacts/{path}", "read", {}),
    ("POST", "/jobs/{job_id}/cancel", "submit", {}),
    ("POST", "/jobs/{job_id}/retry", "submit", {}),
    ("GET", "/operators", "read", {}),
    ("GET", "/operators/{name}", "read", {}),
    ("GET", "/operators/{name}/history", "read", {}),
    ("GET", "/cases", "read", {}),
    ("GET", "/workers", "read", {}),
    ("POST", "/workers/heartbeat", "worker", BEAT),
    ("POST", "/workers/{name}/cards/{card}/release", "admin", {}),
    ("DELETE", "/workers/{name}", "admin", {}),
    ("GET", "/audit", "admin", {}),
    ("POST", "/internal/jobs/{job_id}/claim", "worker", {"json": {"worker": "w", "attempt": 1}}),
    ("GET", "/internal/jobs/{job_id}/bundle", "worker", {}),
    ("POST", "/internal/jobs/{job_id}/heartbeat", "worker", {"json": {"attempt": 1}}),
    ("POST", "/internal/jobs/{job_id}/result", "worker", RESULT),
    ("GET", "/suites", "read", {}),
    ("GET", "/benchmarks/{name}", "read", {}),
    ("GET", "/suites/{name}", "read", {}),
    ("PATCH", "/suites/{name}", "admin", {"json": {"flaky_window": 5}}),
    ("POST", "/suite-runs", "submit", {"json": {"suite": "nightly", "run_key": "k1"}}),
    ("GET", "/suite-runs", "read", {}),
    ("GET", "/suite-runs/{run_id}", "read", {}),
    ("POST", "/suite-runs/{run_id}/submissions", "submit", SUBMISSION),
    ("POST", "/suite-runs/{run_id}/close", "submit", {}),
    ("GET", "/suite-runs/{run_id}/results", "read", {}),
    ("GET", "/suite-runs/{run_id}/compare", "read", {}),
    ("GET", "/suite-runs/{run_id}/compare/{other_id}", "read", {}),
    ("GET", "/suite-runs/{run_id}/webhooks", "read", {}),
    ("POST", "/suite-runs/{run_id}/culprits", "submit", CULPRIT),
    ("GET", "/suite-runs/{run_id}/culprits", "read", {}),
    ("POST", "/ingest/report", "upload", {"params": {"suite": "s", "run_key": "k"}, "content": b"{}"}),
    ("POST", "/ingest/junit", "upload", {"params": {"suite": "s", "run_key": "k"},
                                         "files": {"junit": ("j.xml", b"<testsuites/>")}}),
    ("GET", "/operators.csv", "read", {}),
    ("GET", "/operators/{name}/cases.csv", "read", {}),
    ("GET", "/suite-runs/{run_id}/results.csv", "read", {}),
    ("GET", "/healthz", None, {}),
    ("GET", "/readyz", None, {}),
    ("GET", "/metrics", None, {}),
]
KINDS = ("none", "read", "submit", "upload", "admin", "worker", "revoked", "garbage")
GRANTS = {"read": {"read"}, "submit": {"read", "submit"}, "upload": {"read", "upload"},
          "admin": {"read", "submit", "upload", "worker", "admin"}, "worker": {"worker"}}


def expected(kind: str, scope: str | None) -> int | None:
    """401 / 403, or None: let through (the endpoint's own answer, e.g. 404 for an unknown id)."""
    if scope is None:
        return None
    if kind in ("none", "revoked", "garbage"):
        return 401
    return None if scope in GRANTS[kind] else 403


def url(path: str) -> str:
    filled = path.format(submission_id=999, job_id=999, path="x.txt", name="nope", run_id=999, other_id=998,
                         card=3)
    return filled if filled in ("/healthz", "/readyz", "/metrics") else API + filled


MATRIX = [(m, p, s, kw, kind) for m, p, s, kw in ENDPOINTS for kind in KINDS]


@pytest.mark.parametrize(("method", "path", "scope", "kwargs", "kind"), MATRIX,
                         ids=[f"{m} {p} {k}" for m, p, _, _, k in MATRIX])
def test_auth_matrix(shared_client, method, path, scope, kwargs, kind):
    client, token = shared_client
    secret = {"none": None, "garbage": "cc_not-a-token"}.get(kind, token.get(kind))
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    if path == "/workers/heartbeat":  # a worker name is bound to the token that registered it
        kwargs = {"json": {**BEAT["json"], "name": f"w-{kind}"}}
    r = client.request(method, url(path), headers=headers, **kwargs)
    want = expected(kind, scope)
    if want is None:
        assert r.status_code not in (401, 403, 500), r.text
    else:
        assert r.status_code == want, r.text
        assert r.json()["detail"]
        if want == 401:
            assert r.headers["www-authenticate"] == "Bearer"


def test_the_matrix_covers_every_route(shared_client):
    """A new endpoint must be added to ENDPOINTS (and so to the matrix)."""
    client, _ = shared_client
    spec = client.get("/openapi.json").json()
    routes = {(m.upper(), p.removeprefix(API)) for p, ops in spec["paths"].items() for m in ops
              if p.startswith(API) or p in ("/healthz", "/readyz", "/metrics")}  # not the dashboard's pages
    listed = {(m, p) for m, p, _, _ in ENDPOINTS}
    assert routes == listed


# Every action a submit token takes on something that exists (issue 25): only its owner (or an admin) may.
TENANT_ACTIONS = [
    ("POST", "/jobs/{job_id}/cancel", {}),
    ("POST", "/jobs/{job_id}/retry", {}),
    ("GET", "/submissions/{submission_id}/bundle", {}),
    ("POST", "/suite-runs/{run_id}/submissions", "package"),
    ("POST", "/suite-runs/{run_id}/close", {}),
    ("POST", "/suite-runs/{run_id}/culprits", CULPRIT),
]


def _tenants(client) -> dict[str, dict[str, str]]:
    from server.services import tokens

    with client.app.state.sessionmaker.begin() as session:
        made = {who: tokens.create(session, f"tenant-{who}-{uuid.uuid4().hex[:6]}", ["submit"])[1] for who in "ab"}
    return {who: {"Authorization": f"Bearer {secret}"} for who, secret in made.items()}


def _tenant_a_work(client, a) -> dict[str, int]:
    from tests.server.conftest import package_files

    r = client.post(f"{API}/submissions", headers=a, json={"files": package_files("scale_add"), "modes": ["sim"]})
    assert r.status_code == 202, r.text
    run = client.post(f"{API}/suite-runs", headers=a, json={"suite": "tenants", "run_key": uuid.uuid4().hex[:8]})
    assert run.status_code == 201, run.text
    return {"submission_id": r.json()["submission_id"], "job_id": r.json()["jobs"][0]["id"], "run_id": run.json()["id"]}


def _act(client, method, path, body, ids, headers):
    from tests.server.conftest import package_files

    kwargs = {"json": {"files": package_files("scale_add")}} if body == "package" else body
    return client.request(method, API + path.format(**ids), headers=headers, **kwargs)


def test_a_tenant_cannot_act_on_another_tenants_work(shared_client):
    """Tenant B gets 403 for every action on tenant A's job, submission and suite run, and changes nothing;
    A itself, and an admin, may act (issue 25: B's cancel and retry of A's job answered 200)."""
    client, token = shared_client
    who = _tenants(client)
    ids = _tenant_a_work(client, who["a"])
    for method, path, body in TENANT_ACTIONS:
        r = _act(client, method, path, body, ids, who["b"])
        assert r.status_code == 403, (path, r.status_code, r.text)
        assert "tenant-a-" in r.json()["detail"] or "submitter" in r.json()["detail"], r.text
    job = client.get(f"{API}/jobs/{ids['job_id']}", headers=who["b"]).json()  # reading stays open
    assert (job["status"], job["attempts"], job["cancel_requested"]) == ("queued", 1, False)
    for method, path, body in TENANT_ACTIONS:
        if path.endswith("/retry"):
            continue  # the job is still queued: its owner's retry is a 409, tried below once cancelled
        r = _act(client, method, path, body, ids, who["a"])
        assert r.status_code not in (401, 403, 500), (path, r.status_code, r.text)
    admin = {"Authorization": f"Bearer {token['admin']}"}
    r = client.post(f"{API}/jobs/{ids['job_id']}/retry", headers=admin)
    assert r.status_code == 200 and r.json()["attempts"] == 2, r.text


def test_every_action_on_existing_work_is_in_the_tenant_test(shared_client):
    """A new submit-scope action on a job, submission or suite run must be added to TENANT_ACTIONS."""
    client, _ = shared_client
    spec = client.get("/openapi.json").json()
    owned = {(m.upper(), p.removeprefix(API)) for p, ops in spec["paths"].items() for m in ops
             if m.upper() != "GET" and any(k in p for k in ("{job_id}", "{submission_id}", "{run_id}"))
             and not p.startswith(f"{API}/internal/")}
    assert owned <= {(m, p) for m, p, _ in TENANT_ACTIONS}
