"""Attacks on the service with a stolen or low-scope token, through the real API on a real database.

Each test is an attack that worked, or could have, before the service hardening (docs/SECURITY.md,
"The service"): it must fail now. The forged-result and worker-impersonation attacks are also
replayed with the old checks (unfixed_service.py) and must work there.
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
from tests.hostile import unfixed_service as unfixed
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


def _forge_result(client: TestClient, hdr: dict[str, dict[str, str]], who: str) -> tuple[int, list[Any]]:
    """worker-a claims alice's job; `who` posts an all-pass report for it. (status, stored cases)."""
    job_id = _submit(client, hdr["alice"])["jobs"][0]["id"]
    client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker-a"], json={"worker": "a", "attempt": 1})
    report = load_report("scale_add_sim.json")
    clean = {"mismatch_count": 0, "mismatch_ratio": 0.0, "nan_count": 0, "inf_count": 0, "shape_match": True}
    forged = json.dumps({**report, "cases": [{**c, "verdict": "pass", "metrics": {**(c["metrics"] or {}), **clean}}
                                             for c in report["cases"]]})  # a pass consistent with its numbers
    r = client.post(f"{INTERNAL}/{job_id}/result", headers=hdr[who], data={"attempt": "1", "report": forged})
    return r.status_code, client.get(f"{API}/cases", headers=hdr["alice"], params={"job_id": job_id}).json()["items"]


def test_no_one_but_the_claimant_posts_a_result(service) -> None:
    client, hdr, _ = service
    for who in ("mallory", "worker-m"):
        status, cases = _forge_result(client, hdr, who)
        assert status == 403 and not cases, (who, status)
    job_id = _submit(client, hdr["alice"])["jobs"][0]["id"]
    client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker-a"], json={"worker": "a", "attempt": 1})
    r = client.post(f"{INTERNAL}/{job_id}/heartbeat", headers=hdr["worker-m"], json={"attempt": 1})
    assert r.status_code == 403
    assert client.get(f"{API}/jobs/{job_id}", headers=hdr["alice"]).json()["status"] == "running"


def test_a_forged_result_is_stored_by_the_unfixed_service(service, monkeypatch) -> None:
    client, hdr, _ = service
    unfixed.unfix(monkeypatch)
    status, cases = _forge_result(client, hdr, "worker-m")
    assert status == 200 and cases and {c["verdict"] for c in cases} == {"pass"}, "the forgery failed unfixed"


def _pose_as_worker(client: TestClient, hdr: dict[str, dict[str, str]]) -> tuple[int, int]:
    """worker-a registers npu-1@lab; worker-m's token sends its heartbeat and claims a job in its name."""
    beat = {"name": "npu-1@lab", "host": "lab", "queues": ["npu"]}
    assert client.post(f"{API}/workers/heartbeat", headers=hdr["worker-a"], json=beat).status_code == 200
    posed = client.post(f"{API}/workers/heartbeat", headers=hdr["worker-m"], json=beat).status_code
    job_id = _submit(client, hdr["alice"])["jobs"][0]["id"]
    r = client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker-m"], json={"worker": "npu-1@lab", "attempt": 1})
    return posed, r.status_code


def test_a_stolen_worker_token_cannot_pose_as_another_worker(service) -> None:
    client, hdr, _ = service
    assert _pose_as_worker(client, hdr) == (403, 403)


def test_the_unfixed_service_lets_a_token_pose_as_another_worker(service, monkeypatch) -> None:
    client, hdr, _ = service
    unfixed.unfix(monkeypatch)
    assert _pose_as_worker(client, hdr) == (200, 200), "the impersonation failed unfixed"


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


