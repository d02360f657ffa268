"""The audit log as the API shows it."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.schemas.common import OrmModel, UtcDatetime


class AuditEventRead(OrmModel):
    id: int
    at: UtcDatetime
    actor: str = Field(..., description="the token's name, or 'cli' for the local commands")
    token_id: int | None
    action: str = Field(..., description="submission.create, job.cancel, job.retry, token.create, token.revoke, "
                                         "worker.remove, card.release")
    target: str
    detail: dict[str, Any]


class AuditList(BaseModel):
    items: list[AuditEventRead]
    next_before: int | None = Field(None, description="pass as `before` for the next (older) page")
