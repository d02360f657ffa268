"""Case results across jobs, newest first, with keyset pagination."""
from __future__ import annotations

from pydantic import BaseModel

from server.schemas.operator import CaseResultBrief


class CaseRead(CaseResultBrief):
    operator: str
    case: str
    attempt: int
    branch: str | None
    commit: str | None
    author: str | None


class CaseList(BaseModel):
    items: list[CaseRead]
    next_cursor: int | None  # pass back as ?cursor= for the next (older) page
