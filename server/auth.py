"""API tokens on requests: who is calling, and may they do this?

A token comes from `Authorization: Bearer <token>`, the `X-API-Token` header, or the
`crosscheck_session` cookie (the dashboard's sign-in: a session id of its own, server/services/web_sessions.py).
Scopes: read, submit, upload, admin, worker; admin implies every scope, submit and upload imply read.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.security import APIKeyCookie, APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from server.api.deps import SessionDep, SettingsDep
from server.errors import PermissionDenied, Unauthorized
from server.services import tokens, web_sessions

SESSION_COOKIE = "crosscheck_session"  # a dashboard session id (server/services/web_sessions.py)
TOKEN_HEADER = "X-API-Token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
IMPLIED = {"admin": {"read", "submit", "upload", "admin", "worker"}, "submit": {"read", "submit"},
           "upload": {"read", "upload"}}

# Declared as security schemes so OpenAPI documents them; auto_error=False: we answer 401 ourselves.
_bearer = HTTPBearer(auto_error=False, description="an API token: `Authorization: Bearer cc_...`")
_header = APIKeyHeader(name=TOKEN_HEADER, auto_error=False)
_cookie = APIKeyCookie(name=SESSION_COOKIE, auto_error=False)


@dataclass(frozen=True)
class Caller:
    """The token behind a request (anonymous readers have no token id)."""
    name: str
    scopes: frozenset[str]
    token_id: int | None = None

    def allows(self, scope: str) -> bool:
        return any(scope in IMPLIED.get(s, {s}) for s in self.scopes)


ANONYMOUS = Caller(name="anonymous", scopes=frozenset({"read"}))


def current_token(
    request: Request,
    session: SessionDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
    cookie: Annotated[str | None, Depends(_cookie)],
) -> Caller | None:
    """The caller's token, None when no token was sent; 401 when one was sent but is not valid."""
    secret = (bearer.credentials if bearer else None) or header
    if not secret and cookie:
        if request.method not in SAFE_METHODS:
            _same_origin_only(request)
        token = web_sessions.token_for(session, cookie.strip())
        if token is None:
            raise Unauthorized("the dashboard session has ended (signed out or expired): sign in again")
    elif not secret:
        return None
    else:
        token = tokens.verify(session, secret.strip())
        if token is None:
            raise Unauthorized("invalid or revoked API token")
    return Caller(name=token.name, scopes=frozenset(token.scope_set), token_id=token.id)


def _same_origin_only(request: Request) -> None:
    """The cookie rides along on requests other sites make; refuse a cross-site write that carries it."""
    refuse_cross_site(request, "may not use the dashboard's login cookie")


def refuse_cross_site(request: Request, what: str) -> None:
    """PermissionDenied for a browser request another site made (CSRF), by Origin, Referer or Sec-Fetch-Site.

    Browsers send Origin on every cross-site POST; a request with neither Origin nor Referer is not
    a browser's cross-site form (curl, the CLI) and passes.
    """
    source = request.headers.get("origin") or request.headers.get("referer")
    host = request.headers.get("host")
    if source and source != "null" and urlsplit(source).netloc != host:
        raise PermissionDenied(f"a cross-site request from {source} {what}")
    if source == "null" or request.headers.get("sec-fetch-site") == "cross-site":
        raise PermissionDenied(f"a cross-site request {what}")


def require(scope: str) -> Callable[..., Caller]:
    """A dependency that lets the request through only with a token carrying `scope` (`async def`: no I/O, so no
    hop through the thread pool)."""
    async def dependency(caller: Annotated[Caller | None, Depends(current_token)], settings: SettingsDep) -> Caller:
        if caller is None:
            if scope == "read" and settings.anonymous_read:
                return ANONYMOUS
            raise Unauthorized("an API token is required (Authorization: Bearer <token>)")
        if not caller.allows(scope):
            raise PermissionDenied(f"token {caller.name!r} lacks the {scope!r} scope")
        return caller

    dependency.__name__ = f"require_{scope}"
    return dependency


ReadCaller = Annotated[Caller, Depends(require("read"))]
SubmitCaller = Annotated[Caller, Depends(require("submit"))]
UploadCaller = Annotated[Caller, Depends(require("upload"))]
WorkerCaller = Annotated[Caller, Depends(require("worker"))]
AdminCaller = Annotated[Caller, Depends(require("admin"))]
