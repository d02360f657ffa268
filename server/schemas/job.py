"""A job (one submission in one mode): status, timings, logs, artifacts."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from server.schemas.common import UtcDatetime


class JobTimings(BaseModel):
    created_at: UtcDatetime
    queued_at: UtcDatetime
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    duration_s: float | None


class JobRead(BaseModel):
    id: int
    submission_id: int
    operator: str
    mode: str
    queue: str
    status: str
    attempts: int
    queue_position: int | None
    worker: str | None
    env_fingerprint: dict[str, Any]
    progress: dict[str, Any]
    summary: dict[str, Any]
    case_count: int
    timeout_s: float
    cancel_requested: bool
    error: str | None
    submitted_by: str
    timings: JobTimings


class JobList(BaseModel):
    items: list[JobRead]


class CaseLogs(BaseModel):
    case: str
    verdict: str
    stdout: str = ""
    stderr: str = ""
    plog: str = ""


class JobLogs(BaseModel):
    job_id: int
    cases: list[CaseLogs]
    artifacts: list[str]


class ArtifactRead(BaseModel):
    path: str
    size_bytes: int


class ArtifactList(BaseModel):
    job_id: int
    items: list[ArtifactRead]
