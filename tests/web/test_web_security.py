"""Login CSRF, security headers on every kind of response."""
from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.security_headers import CSP
from tests.web.test_submit_auth import fresh  # noqa: F401 - the fixture

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
    assert same.status_code == 303 and "crosscheck_token=" in same.headers["set-cookie"]


def test_a_cross_site_sign_out_is_refused(fresh: tuple[TestClient, dict[str, str]]) -> None:  # noqa: F811
    client, secrets = fresh
    client.cookies.set("crosscheck_token", secrets["read"])
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


def test_the_docs_page_may_load_its_cdn_but_not_be_framed(anon: TestClient) -> None:
    policy = anon.get("/docs").headers["content-security-policy"]
    assert "https://cdn.jsdelivr.net" in policy and "frame-ancestors 'none'" in policy
