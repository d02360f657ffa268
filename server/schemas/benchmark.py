"""The benchmark view over the API: tasks × runs, levels, and the gym's word beside ours."""
from __future__ import annotations

from pydantic import BaseModel


class BenchmarkRun(BaseModel):
    id: int
    commit: str | None
    created_at: str


class BenchmarkLevel(BaseModel):
    name: str
    tasks: int
    ours_pass: int
    gym_pass: int
    gym_known: int


class BenchmarkCell(BaseModel):
    verdict: str | None
    cheat: str
    graph_diff: float | None
    aicore_us: float | None
    job_id: int | None


class BenchmarkTask(BaseModel):
    name: str
    level: str
    ours: str | None
    gym: str | None
    disagrees: bool
    runs: dict[str, BenchmarkCell]


class BenchmarkRead(BaseModel):
    suite: str
    runs: list[BenchmarkRun]
    levels: list[BenchmarkLevel]
    tasks: list[BenchmarkTask]
