"""Credentials checked before any body is read: nothing anonymous is buffered or spooled.

FastAPI reads (and parses) a route's body before it runs the route's dependencies, the token check
included: a large body sent without a token was read whole, then answered 401. This middleware looks
at the headers only: a write (POST, PUT, PATCH, DELETE) without a valid API token or dashboard session
is answered at once, 401 for the API and a redirect to sign in for the dashboard. Scopes are still
checked by each route. `/login` takes the token in its body, so it is exempt, and takes only a small
urlencoded form: any other body (multipart would spool file parts to disk) is a 415.
"""
from __future__ import annotations

import json
from http.cookies import SimpleCookie

import anyio
from sqlalchemy.orm import Session, sessionmaker
from starlette.types import ASGIApp, Receive, Scope, Send

from server.auth import SAFE_METHODS, SESSION_COOKIE, TOKEN_HEADER
from server.services import tokens, web_sessions

LOGIN, LOGOUT = "/login", "/logout"
FORM = b"application/x-www-form-urlencoded"


def _secrets(headers: dict[bytes, bytes]) -> tuple[str | None, str | None]:
    """(API token, session id) as the request carries them (the same places server/auth.py reads)."""
    auth = headers.get(b"authorization", b"").decode("latin-1")
    scheme, _, bearer = auth.partition(" ")
    token = (bearer.strip() if scheme.lower() == "bearer" else "") or headers.get(
        TOKEN_HEADER.lower().encode(), b"").decode("latin-1").strip()
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # noqa: BLE001 - a malformed Cookie header carries no session
        return token or None, None
    morsel = cookie.get(SESSION_COOKIE)
    return token or None, (morsel.value.strip() if morsel else None) or None


def known(maker: sessionmaker[Session], token: str | None, session_id: str | None) -> bool:
    """Whether the credential is valid now (read only: nothing is written or committed). One statement, outside
    a transaction: every upload asks it, and a BEGIN and ROLLBACK around it were two more round trips. Never
    flushed, so the token's last use, which `verify` may set, is not written from here."""
    with maker(autoflush=False) as session:
        session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        if token:
            return tokens.verify(session, token) is not None
        return session_id is not None and web_sessions.token_for(session, session_id) is not None


class EarlyAuth:
    """Pure ASGI middleware: a write without a valid credential never reaches the body parser."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS or scope["path"] == LOGOUT:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if scope["path"] == LOGIN:
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if kind != FORM:
                await _answer(send, 415, "sign in with an application/x-www-form-urlencoded form (field 'token')")
                return
            await self.app(scope, receive, send)
            return
        token, session_id = _secrets(headers)
        maker = scope["app"].state.sessionmaker
        if (token or session_id) and await anyio.to_thread.run_sync(known, maker, token, session_id):
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith("/api/"):
            await _answer(send, 401, "an API token is required (Authorization: Bearer <token>)" if not
                          (token or session_id) else "invalid or revoked API token")
            return
        await send({"type": "http.response.start", "status": 303,
                     "headers": [(b"location", b"/login"), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
