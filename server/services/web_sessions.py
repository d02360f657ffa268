"""Dashboard sessions: the sign-in cookie is a session id of its own, stored hashed, never the API token.

A stolen cookie then opens the dashboard only until sign-out or expiry, and reveals no token usable
with the API; signing out revokes the session server-side (docs/SECURITY.md).
"""
from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import ApiToken, WebSession
from server.models.base import utcnow
from server.services.tokens import hash_secret

SESSION_MAX_AGE_S = 7 * 24 * 3600
SESSION_PREFIX = "ccs_"


def start(session: Session, token: ApiToken) -> str:
    """A new session for `token`; the secret goes into the cookie and is never stored."""
    secret = SESSION_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    session.add(WebSession(session_hash=hash_secret(secret), token_id=token.id, created_at=now,
                           expires_at=now + timedelta(seconds=SESSION_MAX_AGE_S)))
    session.flush()
    return secret


def token_for(session: Session, secret: str) -> ApiToken | None:
    """The token a live session signs in as; None when unknown, expired, signed out or its token revoked."""
    row = session.scalar(select(WebSession).where(WebSession.session_hash == hash_secret(secret)))
    if row is None or row.revoked_at is not None:
        return None
    expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=utcnow().tzinfo)
    if expires <= utcnow():
        return None
    token = session.get(ApiToken, row.token_id)
    return token if token is not None and token.revoked_at is None else None


def end(session: Session, secret: str) -> None:
    """Sign out: the session stops working at once, whoever holds the cookie."""
    row = session.scalar(select(WebSession).where(WebSession.session_hash == hash_secret(secret)))
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()
