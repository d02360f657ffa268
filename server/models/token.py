"""API tokens: stored as sha256 hashes, with scopes."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

SCOPES = ("read", "submit", "upload", "admin", "worker")  # upload: results run elsewhere (docs/SECURITY.md)


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    prefix: Mapped[str] = mapped_column(String(16), index=True)  # shown in listings, never the secret
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[str] = mapped_column(String(100))  # space separated
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]

    @property
    def scope_set(self) -> set[str]:
        return set(self.scopes.split())
