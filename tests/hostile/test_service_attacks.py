"""Attacks on the service with a stolen or low-scope token, through the real API on a real database.

Each test is an attack that worked, or could have, before the service hardening (docs/SECURITY.md,
"The service"): it must fail now.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.migrate import upgrade
from server.services import tokens
from tests.server.conftest import load_report, package_files, zip_package
from tests.web.conftest import make_app, make_settings

API = "/api/v1"
INTERNAL = f"{API}/internal/jobs"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, dict[str, str]], dict[str, str]]]:
    """An app with tokens of two tenants, two workers and an admin; (client, headers, secrets)."""
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    secrets: dict[str, str] = {}
    with app.state.sessionmaker.begin() as session:
        for name, scopes in (("alice", ["submit"]), ("mallory", ["submit"]), ("worker-a", ["worker"]),
                             ("worker-m", ["worker"]), ("root", ["admin"])):
            secrets[name] = tokens.create(session, name, scopes)[1]
    with TestClient(app, follow_redirects=False) as client:
        yield client, {k: {"Authorization": f"Bearer {v}"} for k, v in secrets.items()}, secrets
    app.state.engine.dispose()


def _submit(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    data = zip_package(package_files("scale_add"), "scale_add")
    r = client.post(f"{API}/submissions", headers=headers, files={"file": ("scale_add.zip", data)})
    assert r.status_code == 202, r.text
    return dict(r.json())


def _everything_readable(client: TestClient, headers: dict[str, str]) -> str:
    """Every GET a token may try, concatenated: the spec's paths with id 1."""
    out = []
    for path in client.get("/openapi.json").json()["paths"]:
        url = path.replace("{job_id}", "1").replace("{submission_id}", "1").replace("{run_id}", "1") \
            .replace("{other_id}", "1").replace("{name}", "scale_add").replace("{path}", "../../tokens.json")
        if "{" not in url:
            out.append(client.get(url, headers=headers).text)
    return "\n".join(out)


def test_a_submit_token_cannot_get_the_admin_token(service) -> None:
    client, hdr, secrets = service
    _submit(client, hdr["alice"])
    seen = _everything_readable(client, hdr["mallory"])
    assert secrets["root"] not in seen and secrets["worker-a"] not in seen
    assert client.get(f"{API}/audit", headers=hdr["mallory"]).status_code == 403
    for sneaky in ("../../tokens.json", "..%2F..%2Ftokens.json", "/etc/passwd"):
        r = client.get(f"{API}/jobs/1/artifacts/{sneaky}", headers=hdr["mallory"])
        assert r.status_code in (404, 422) and secrets["root"] not in r.text


def test_a_tenant_cannot_read_another_tenants_bundle(service) -> None:
    client, hdr, _ = service
    sub = _submit(client, hdr["alice"])
    job_id = sub["jobs"][0]["id"]
    assert client.get(f"{API}/submissions/{sub['submission_id']}/bundle", headers=hdr["mallory"]).status_code == 403
    assert client.get(f"{INTERNAL}/{job_id}/bundle", headers=hdr["mallory"]).status_code == 403  # no worker scope
    assert client.get(f"{INTERNAL}/{job_id}/bundle", headers=hdr["worker-m"]).status_code == 403  # not claimed
    claim = client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker-a"], json={"worker": "a", "attempt": 1})
    assert claim.status_code == 200
    assert client.get(f"{INTERNAL}/{job_id}/bundle", headers=hdr["worker-m"]).status_code == 403  # not its claim


def test_no_one_but_the_claimant_posts_a_result(service) -> None:
    client, hdr, _ = service
    job_id = _submit(client, hdr["alice"])["jobs"][0]["id"]
    client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker-a"], json={"worker": "a", "attempt": 1})
    report = load_report("scale_add_sim.json")
    forged = json.dumps({**report, "cases": [{**c, "verdict": "pass"} for c in report["cases"]]})
    for who in ("mallory", "worker-m"):
        r = client.post(f"{INTERNAL}/{job_id}/result", headers=hdr[who], data={"attempt": "1", "report": forged})
        assert r.status_code == 403, (who, r.text)
    r = client.post(f"{INTERNAL}/{job_id}/heartbeat", headers=hdr["worker-m"], json={"attempt": 1})
    assert r.status_code == 403
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["alice"]).json()["status"] == "running"
    assert not client.get(f"{API}/cases", headers=hdr["alice"], params={"job_id": job_id}).json()["items"]


def test_a_stolen_worker_token_cannot_pose_as_another_worker(service) -> None:
    client, hdr, _ = service
    beat = {"name": "npu-1@lab", "host": "lab", "queues": ["npu"]}
    assert client.post(f"{API}/workers/heartbeat", headers=hdr["worker-a"], json=beat).status_code == 200
    assert client.post(f"{API}/workers/heartbeat", headers=hdr["worker-m"], json=beat).status_code == 403
    job_id = _submit(client, hdr["alice"])["jobs"][0]["id"]
    r = client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker-m"], json={"worker": "npu-1@lab", "attempt": 1})
    assert r.status_code == 403


def test_another_tokens_idempotency_key_neither_replays_nor_blocks(service) -> None:
    client, hdr, _ = service
    data = zip_package(package_files("scale_add"), "scale_add")
    mine = client.post(f"{API}/submissions", headers={**hdr["alice"], "Idempotency-Key": "nightly"},
                       files={"file": ("scale_add.zip", data)})
    theirs = client.post(f"{API}/submissions", headers={**hdr["mallory"], "Idempotency-Key": "nightly"},
                         files={"file": ("scale_add.zip", data)})
    assert (mine.status_code, theirs.status_code) == (202, 202)
    assert mine.json()["submission_id"] != theirs.json()["submission_id"]


def test_a_cross_site_page_cannot_sign_a_victim_in_or_out(service) -> None:
    client, _, secrets = service
    for path, form in (("/login", {"token": secrets["mallory"]}), ("/logout", {})):
        r = client.post(path, data=form, headers={"Origin": "https://evil.example"})
        assert r.status_code == 403 and "set-cookie" not in r.headers


