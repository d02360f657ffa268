"""API tokens: create (the secret is shown once), verify by hash, revoke."""
from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.errors import InvalidInput, NotFound
from server.models import ApiToken
from server.models.base import utcnow
from server.models.token import SCOPES
from server.services import audit

TOKEN_PREFIX = "cc_"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create(session: Session, name: str, scopes: list[str], actor: str = audit.CLI,
           actor_token_id: int | None = None) -> tuple[ApiToken, str]:
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise InvalidInput(f"unknown scope(s) {', '.join(bad) or '(none given)'}; use {', '.join(SCOPES)}")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(name=name, prefix=secret[:10], token_hash=hash_secret(secret), scopes=" ".join(sorted(set(scopes))))
    session.add(token)
    session.flush()
    audit.record(session, actor, audit.TOKEN_CREATE, f"token {token.id}", actor_token_id, name=name,
                 scopes=token.scopes)
    return token, secret


def verify(session: Session, secret: str) -> ApiToken | None:
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_secret(secret)))
    if token is None or token.revoked_at is not None:
        return None
    now = utcnow()
    last = token.last_used_at
    if last is None or (now - (last if last.tzinfo else last.replace(tzinfo=now.tzinfo))).total_seconds() > 60:
        token.last_used_at = now  # throttled: reads should not write on every request
    return token


def revoke(session: Session, token_id: int, actor: str = audit.CLI, actor_token_id: int | None = None) -> ApiToken:
    token = session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"no token {token_id}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        audit.record(session, actor, audit.TOKEN_REVOKE, f"token {token.id}", actor_token_id, name=token.name)
    return token


def list_tokens(session: Session) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.id)))
