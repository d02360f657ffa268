"""Workers: their heartbeat and how the API lists them."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.schemas.common import OrmModel, UtcDatetime


class WorkerHeartbeat(BaseModel):
    name: str = Field(..., min_length=1, max_length=200)
    host: str = Field(..., max_length=200)
    queues: list[str] = Field(default_factory=list)
    capabilities: dict[str, Any] = Field(default_factory=dict, description="modes, devices, versions, ...")
    current_job_id: int | None = Field(default=None, ge=1, le=2**63 - 1)
    jobs_done: int | None = Field(default=None, ge=0, le=2**63 - 1)


class WorkerRead(OrmModel):
    name: str
    host: str
    queues: list[str]
    capabilities: dict[str, Any]
    started_at: UtcDatetime
    last_heartbeat: UtcDatetime
    current_job_id: int | None
    jobs_done: int
    online: bool = False
    card_releases: dict[str, int] = Field(default_factory=dict,
                                          description="NPU cards an admin released: {card: release number}")


class CardReleaseRead(BaseModel):
    worker: str
    card: int
    release: int = Field(..., description="applied by the worker at its next heartbeat")


class WorkerRemoved(BaseModel):
    removed: str = Field(..., description="the worker's name")


class WorkerList(BaseModel):
    items: list[WorkerRead]
