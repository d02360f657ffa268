"""Webhook deliveries: one payload to one URL, with every attempt logged."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(primary_key=True)
    suite_run_id: Mapped[int] = mapped_column(ForeignKey("suite_runs.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(String(500))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    digest: Mapped[str] = mapped_column(String(64))  # of the payload's substance: the same news is sent once
    status: Mapped[str] = mapped_column(String(16), default=PENDING, index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    log: Mapped[list[Any]] = mapped_column(default=list)  # [{at, status_code, error, duration_ms}]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    delivered_at: Mapped[datetime | None]
