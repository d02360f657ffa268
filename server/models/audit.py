"""The audit log: who submitted, cancelled, retried, created or revoked tokens, removed workers, and when."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class AuditEvent(Base):
    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(100))  # the token's name, or "cli" for the local commands
    token_id: Mapped[int | None] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(32), index=True)  # server/services/audit.py ACTIONS
    target: Mapped[str] = mapped_column(String(200), default="")  # "job 12", "token 3", "worker w1@host"
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)
