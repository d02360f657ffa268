"""Sign a test client in as the dashboard does: the cookie holds a session id, never the token."""
from __future__ import annotations

from typing import Any

import httpx2 as httpx

SESSION_COOKIE = "crosscheck_session"


def sign_in(client: Any, secret: str) -> None:
    """POST /login with the token: the client's cookie jar gets the session (a TestClient or an httpx client)."""
    r = client.post("/login", data={"token": secret}, follow_redirects=False)
    assert r.status_code == 303, r.text


def session_cookie(base_url: str, secret: str) -> str:
    """A session id for a live server (a browser context's cookie)."""
    r = httpx.post(base_url.rstrip("/") + "/login", data={"token": secret}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return r.cookies[SESSION_COOKIE]
