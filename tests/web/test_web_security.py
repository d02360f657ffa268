"""Login CSRF, security headers on every kind of response."""
from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.security_headers import CSP
from tests.web.test_submit_auth import fresh  # noqa: F401 - the fixture
from tests.signin import sign_in

EVIL = "https://evil.example"


def test_a_cross_site_sign_in_is_refused(fresh: tuple[TestClient, dict[str, str]]) -> None:  # noqa: F811
    client, secrets = fresh
    for headers in ({"Origin": EVIL}, {"Referer": EVIL + "/page"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"}):
        response = client.post("/login", data={"token": secrets["read"]}, headers=headers)
        assert response.status_code == 403, headers
        assert "set-cookie" not in response.headers
        assert "cross-site" in response.text
    same = client.post("/login", data={"token": secrets["read"]}, headers={"Origin": "http://testserver"})
    assert same.status_code == 303 and "crosscheck_session=" in same.headers["set-cookie"]


def test_a_cross_site_sign_out_is_refused(fresh: tuple[TestClient, dict[str, str]]) -> None:  # noqa: F811
    client, secrets = fresh
    sign_in(client, secrets["read"])
    response = client.post("/logout", headers={"Origin": EVIL})
    assert response.status_code == 403 and "set-cookie" not in response.headers
    assert client.post("/logout", headers={"Origin": "http://testserver"}).status_code == 303


@pytest.mark.parametrize("path", ["/", "/login", "/api/v1/operators", "/api/v1/jobs/999999", "/static/app.js",
                                  "/healthz", "/no-such-page", "/openapi.json"])
def test_every_response_carries_the_security_headers(anon: TestClient, path: str) -> None:
    response = anon.get(path, headers={"Accept": "text/html"})
    headers: Any = response.headers
    assert headers["content-security-policy"] == CSP
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-frame-options"] == "DENY"


def test_the_docs_page_loads_only_our_own_files_and_cannot_be_framed(anon: TestClient) -> None:
    page = anon.get("/docs")
    policy = page.headers["content-security-policy"]
    assert "http" not in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("/docs/") for s in sources), sources  # no CDN
    for source in sources:
        assert anon.get(source).status_code == 200, source


def _admin(client: TestClient) -> str:
    from server.services import tokens

    with client.app_state.sessionmaker.begin() as session:  # type: ignore[attr-defined]
        return tokens.create(session, "root", ["admin"])[1]


def test_admins_see_the_audit_log_and_others_do_not(fresh: tuple[TestClient, dict[str, str]]) -> None:  # noqa: F811
    from tests.web.html import parse

    client, secrets = fresh
    sign_in(client, secrets["read"])
    assert client.get("/audit").status_code == 403
    sign_in(client, _admin(client))
    page = parse(client.get("/audit").text)
    rows = [r.text() for r in page.find("table", cls="audit").find_all("tr")[1:]]
    assert any("token.create" in r and "cli" in r and "root" in r for r in rows), rows
    assert any(a.attrs.get("href") == "/audit" for a in page.find("nav").find_all("a"))


def test_an_admin_removes_a_stale_worker_from_the_workers_page(fresh: tuple[TestClient, dict[str, str]]) -> None:  # noqa: F811
    from datetime import timedelta

    from server.models import Worker
    from server.models.base import utcnow
    from server.services import workers
    from tests.web.html import parse

    client, _ = fresh
    state = client.app_state  # type: ignore[attr-defined]
    with state.sessionmaker.begin() as session:
        workers.heartbeat(session, "gone@host", "host", ["sim"], {}, None)
        workers.heartbeat(session, "alive@host", "host", ["sim"], {}, None)
        session.get(Worker, "gone@host").last_heartbeat = utcnow() - timedelta(hours=2)
    sign_in(client, _admin(client))
    forms = [f.attrs["action"] for f in parse(client.get("/workers").text).find_all("form")]
    assert "/workers/gone%40host/remove" in forms and "/workers/alive%40host/remove" not in forms
    assert client.post("/workers/gone@host/remove").status_code == 303
    assert client.post("/workers/alive@host/remove").status_code == 409
    assert client.post("/workers/gone@host/remove", headers={"Origin": EVIL}).status_code == 403
    names = parse(client.get("/workers").text).text()
    assert "gone@host" not in names and "alive@host" in names
