"""Results produced outside the queue: our runtime's JSON report, or pytest's --junitxml output."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from server.api.deps import BlobsDep, SessionDep, SettingsDep, get_settings
from server.api.suites import run_url
from server.auth import UploadCaller
from server.body_limit import MAX_SIDECAR_BYTES
from server.config import Settings
from server.errors import InvalidInput, PayloadTooLarge
from server.schemas.common import ErrorRead
from server.schemas.suite import IngestRead
from server.services import ingest, junit_in, results

router = APIRouter(prefix="/ingest", tags=["ingest"])
ERRORS: dict[int | str, dict[str, Any]] = {403: {"model": ErrorRead}, 409: {"model": ErrorRead},
                                           413: {"model": ErrorRead}, 422: {"model": ErrorRead}}


class Target(BaseModel):
    """Where an upload goes: a suite run (made on first use) and the attempt within it."""
    suite: str = Field(max_length=200)
    run_key: str = Field(max_length=200, description="the pipeline's id: the same key is the same run")
    attempt: int = Field(default=1, ge=1, le=1000, description="a re-run of the pipeline is the next attempt")
    branch: str | None = Field(default=None, max_length=200)
    commit: str | None = Field(default=None, max_length=100)
    pipeline: str | None = Field(default=None, max_length=500, description="the pipeline's URL")
    label: list[str] = Field(default_factory=list, description="more labels as key=value (repeatable)")

    def labels(self) -> dict[str, str]:
        out = {k: v for k, v in (("branch", self.branch), ("commit", self.commit), ("pipeline", self.pipeline)) if v}
        for item in self.label:
            key, sep, value = item.partition("=")
            if not sep:
                raise InvalidInput(f"label {item!r}: use key=value")
            out[key.strip()] = value.strip()
        return out


def target(suite: str, run_key: str, attempt: Annotated[int, Query(ge=1, le=1000)] = 1,
           branch: str | None = None, commit: str | None = None, pipeline: str | None = None,
           label: Annotated[list[str], Query()] = []) -> Target:  # noqa: B006
    return Target(suite=suite, run_key=run_key, attempt=attempt, branch=branch, commit=commit, pipeline=pipeline,
                  label=label)


async def capped_body(request: Request, settings: Annotated[Settings, Depends(get_settings)]) -> bytes:
    """The raw body, refused with 413 as soon as it passes the limit (the length header may lie)."""
    limit = settings.max_ingest_bytes
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise PayloadTooLarge(f"upload is {length} bytes; the limit is {limit} (MAX_INGEST_BYTES)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"upload is over {limit} bytes (MAX_INGEST_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def _read(request: Request, settings: Settings, stored: ingest.Stored) -> IngestRead:
    return IngestRead(suite_run_id=stored.run.id, url=run_url(request, settings, stored.run.id), stored=stored.stored,
                      duplicates=stored.duplicates, unverified=stored.unverified, missing_fingerprint=stored.missing,
                      operators=stored.operators, jobs=stored.jobs)


@router.post("/report", response_model=IngestRead, summary="Store a runtime JSON report run elsewhere",
             responses=ERRORS, openapi_extra={"requestBody": {"required": True, "content": {
                 "application/json": {"schema": {"type": "object", "description": "`crosscheck run --json` output"}}}}})
def ingest_report(request: Request, caller: UploadCaller, session: SessionDep, settings: SettingsDep, blobs: BlobsDep,
                  where: Annotated[Target, Depends(target)], body: Annotated[bytes, Depends(capped_body)]) -> IngestRead:
    """E.g. `crosscheck run --mode npu --json` on an NPU host outside the queue; all or nothing."""
    try:
        report = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"the report is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("the report is nested too deeply") from None
    report = results.validate_report(report)
    mode, sub = report.get("mode"), report.get("submission") or {}
    if mode not in ingest.MODES:
        raise InvalidInput(f"report.mode must be sim or npu, got {mode!r}")
    env = report.get("environment") if isinstance(report.get("environment"), dict) else {}
    content = sub.get("sha256") if isinstance(sub, dict) and isinstance(sub.get("sha256"), str) else None
    operators = {str(c["operator"])[:200] for c in report["cases"]}
    stored = ingest.store(session, blobs, ingest.Upload(
        suite=where.suite, run_key=where.run_key, attempt=where.attempt, labels=where.labels(), mode=mode,
        environment=env, cases=report["cases"], kind="report", filename=f"{sub.get('name') or 'report'}.json",
        raw=body, content_sha256={op: content for op in operators if content}), caller.name, caller.allows("admin"),
        caller.token_id)
    return _read(request, settings, stored)


@dataclass
class JUnitUpload:
    xml: bytes
    sidecar: bytes | None
    filename: str


async def junit_form(request: Request, settings: Annotated[Settings, Depends(get_settings)]) -> JUnitUpload:
    limit = settings.max_ingest_bytes
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit + MAX_SIDECAR_BYTES:
        raise PayloadTooLarge(f"upload is {length} bytes; the limit is {limit} (MAX_INGEST_BYTES)")
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise InvalidInput("send multipart/form-data with the field 'junit' (and optionally 'metrics')")
    async with request.form(max_files=2, max_fields=10, max_part_size=MAX_SIDECAR_BYTES) as form:
        xml, sidecar = form.get("junit"), form.get("metrics")
        if xml is None or isinstance(xml, str):
            raise InvalidInput("multipart field 'junit' (the pytest --junitxml file) is missing")
        data = await xml.read(limit + 1)
        if len(data) > limit:
            raise PayloadTooLarge(f"the JUnit file is over {limit} bytes (MAX_INGEST_BYTES)")
        extra = (sidecar.encode() if isinstance(sidecar, str) else await sidecar.read(MAX_SIDECAR_BYTES + 1)
                 if sidecar is not None else None)
        if extra is not None and len(extra) > MAX_SIDECAR_BYTES:
            raise PayloadTooLarge(f"the metrics sidecar is over {MAX_SIDECAR_BYTES} bytes")
        return JUnitUpload(xml=data, sidecar=extra, filename=xml.filename or "junit.xml")


@router.post("/junit", response_model=IngestRead, summary="Store pytest --junitxml results run elsewhere",
             responses=ERRORS, openapi_extra={"requestBody": {"required": True, "content": {"multipart/form-data": {
                 "schema": {"type": "object", "required": ["junit"], "properties": {
                     "junit": {"type": "string", "format": "binary", "description": "pytest --junitxml output"},
                     "metrics": {"type": "string", "format": "binary",
                                 "description": "JSON: {environment: {pypto, cann, device, torch}, cases: "
                                                "{'classname::name': {max_abs_diff, rtol, atol, ...}}}"}}}}}}})
def ingest_junit(request: Request, caller: UploadCaller, session: SessionDep, settings: SettingsDep, blobs: BlobsDep,
                 where: Annotated[Target, Depends(target)], upload: Annotated[JUnitUpload, Depends(junit_form)],
                 mode: Literal["npu"] = "npu",
                 operator: Annotated[str | None, Query(max_length=200, description="every testcase's operator")] = None,
                 ) -> IngestRead:
    """NPU results only; the metrics sidecar carries the fingerprint and each test's diffs. All or nothing."""
    sidecar = junit_in.parse_sidecar(upload.sidecar)
    cases = junit_in.to_cases(junit_in.parse(upload.xml), sidecar, operator)
    stored = ingest.store(session, blobs, ingest.Upload(
        suite=where.suite, run_key=where.run_key, attempt=where.attempt, labels=where.labels(), mode=mode,
        environment=dict(sidecar.environment), cases=cases, kind="junit", filename=upload.filename, raw=upload.xml),
        caller.name, caller.allows("admin"), caller.token_id)
    return _read(request, settings, stored)
