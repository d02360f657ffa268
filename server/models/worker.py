"""Workers that reported a heartbeat, with their capabilities."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class Worker(Base):
    __tablename__ = "workers"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    host: Mapped[str] = mapped_column(String(200))
    queues: Mapped[list[Any]] = mapped_column(default=list)
    capabilities: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # {card: release number}: quarantined cards an admin released; the worker applies each number once.
    card_releases: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_heartbeat: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    current_job_id: Mapped[int | None] = mapped_column(Integer)
    jobs_done: Mapped[int] = mapped_column(Integer, default=0)
    token_id: Mapped[int | None] = mapped_column(Integer)  # the worker token the name is bound to
