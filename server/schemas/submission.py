"""Submitting an operator package or script, and what comes back."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from runtime.modes import Mode
from server.schemas.common import OrmModel, UtcDatetime


class SubmissionLabels(BaseModel):
    branch: str | None = Field(default=None, max_length=200)
    commit: str | None = Field(default=None, max_length=100)
    author: str | None = Field(default=None, max_length=200)


class SubmissionCreate(BaseModel):
    """The JSON form of a submission: the package's files as text."""
    name: str | None = Field(default=None, max_length=200, description="operator name (default: the package's op_name)")
    operator: str | None = Field(default=None, max_length=200, description="alias of name")
    files: dict[str, str] = Field(..., description="path -> file text, e.g. test_cases.json, *_impl.py, *_golden.py")
    modes: list[Mode] = Field(default_factory=lambda: list[Mode](["sim"]))
    cases: list[str] = Field(default_factory=list, description="run only these case ids")
    labels: SubmissionLabels = Field(default_factory=lambda: SubmissionLabels())
    suite_run_id: int | None = Field(default=None, ge=1, le=2**63 - 1)
    pypto: str | None = Field(default=None, max_length=48,
                              description="the pypto version the kernel was written for; its jobs go only to "
                                          "workers with it (docs/versions.md)")
    fresh: bool = Field(default=False, description="run it even when an identical submission (same files, cases, "
                                                   "pypto and host versions) has results to reuse")
    interactive: bool = Field(default=False, description="someone waits for the result: its jobs go to the next "
                                                         "free worker before batch jobs (docs/platform.md §4)")

    @model_validator(mode="after")
    def _one_name(self) -> SubmissionCreate:
        if self.name and self.operator and self.name != self.operator:
            raise ValueError("give 'name' or 'operator', not two different names")
        return self

    @property
    def operator_name(self) -> str | None:
        return self.name or self.operator


class JobBrief(OrmModel):
    id: int
    mode: str
    status: str
    queue: str


class SubmissionAccepted(BaseModel):
    submission_id: int
    jobs: list[JobBrief]
    reused: dict[str, int] = Field(default_factory=dict, description="mode -> the earlier job of an identical "
                                   "submission whose results stand for this one (not run again; `fresh` runs it)")


class SubmissionRead(OrmModel):
    id: int
    operator: str
    kind: str
    filename: str
    bundle_sha256: str
    modes: list[str]
    case_filter: list[str]
    labels: dict[str, Any]
    suite_run_id: int | None
    created_by: str
    created_at: UtcDatetime
    jobs: list[JobBrief] = []
