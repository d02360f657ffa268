"""What workers send and receive: claim, heartbeat, result."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

INT64_MAX = 2**63 - 1  # what the database stores


class ClaimCreate(BaseModel):
    worker: str = Field(..., min_length=1, max_length=200)
    attempt: int = Field(..., ge=1, le=INT64_MAX)


class ClaimedSubmission(BaseModel):
    id: int
    filename: str
    kind: str
    case_filter: list[str]
    sha256: str


class ClaimedJob(BaseModel):
    id: int
    mode: str
    attempt: int
    timeout_s: float
    case_timeout_s: float
    case_memory_gib: float | None  # None: the worker's host share (runtime/fence/host_memory.py)
    operator: str
    submission: ClaimedSubmission


class ClaimRead(BaseModel):
    claimed: bool
    job: ClaimedJob


class JobHeartbeatCreate(BaseModel):
    attempt: int = Field(..., ge=1, le=INT64_MAX)
    progress: dict[str, Any] | None = None


class JobHeartbeatRead(BaseModel):
    cancel_requested: bool


class ResultRead(BaseModel):
    stored: bool  # False: a duplicate or stale delivery, nothing changed
