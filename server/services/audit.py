"""The audit log: one row per consequential act (submit, cancel, retry, tokens, workers, uploads, failed
sign-ins), shown to admins."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import AuditEvent

SUBMIT, CANCEL, RETRY = "submission.create", "job.cancel", "job.retry"
TOKEN_CREATE, TOKEN_REVOKE = "token.create", "token.revoke"
WORKER_REMOVE, CARD_RELEASE = "worker.remove", "card.release"
UPLOAD, LOGIN_FAILED = "results.upload", "login.failed"
ACTIONS = (SUBMIT, CANCEL, RETRY, TOKEN_CREATE, TOKEN_REVOKE, WORKER_REMOVE, CARD_RELEASE, UPLOAD, LOGIN_FAILED)
CLI = "cli"  # the actor of the local commands (crosscheck token, crosscheck up): whoever holds the database


def record(session: Session, actor: str, action: str, target: str, token_id: int | None = None,
           **detail: Any) -> AuditEvent:
    """Add one event to the caller's unit of work (it commits, or rolls back, with the act itself)."""
    event = AuditEvent(actor=(actor or "")[:100], token_id=token_id, action=action, target=target[:200],
                       detail=detail)
    session.add(event)
    return event


def recent(session: Session, limit: int = 100, before_id: int | None = None,
           action: str | None = None) -> list[AuditEvent]:
    """Newest first; `before_id` continues a page (keyset pagination on id)."""
    query = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(limit)
    if before_id is not None:
        query = query.where(AuditEvent.id < before_id)
    if action:
        query = query.where(AuditEvent.action == action)
    return list(session.scalars(query))
