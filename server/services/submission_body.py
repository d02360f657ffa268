"""A submission as an HTTP request carries it (a multipart upload or JSON files), read into a
NewSubmission: the one parser behind POST /api/v1/submissions, the suite runs' operator uploads and
the dashboard's Submit form (through server.api.deps.NewSubmissionDep)."""
from __future__ import annotations

from pathlib import PurePosixPath

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from server.config import Settings
from server.errors import InvalidInput, PayloadTooLarge
from server.schemas.submission import SubmissionCreate
from server.services.submissions import NewSubmission, bundle_from_files

FORM_OVERHEAD_BYTES = 64 * 1024  # multipart boundaries and the small text fields
MAX_FIELD_BYTES = 64 * 1024


def _split_repeatable(values: list[str]) -> list[str]:
    """Repeatable fields that may also be comma separated: ?modes=sim&modes=npu or modes=sim,npu."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _too_large(settings: Settings, size: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"upload is {size} bytes; the limit is {settings.max_upload_bytes}")


def _body_limit(settings: Settings, ctype: str) -> int:
    """JSON escapes the files' text (quotes, newlines), so it gets room to spare; the bundle is checked later."""
    factor = 2 if ctype.startswith("application/json") else 1
    return factor * settings.max_upload_bytes + FORM_OVERHEAD_BYTES


async def _from_json(request: Request, settings: Settings) -> NewSubmission:
    body = await request.body()
    if len(body) > _body_limit(settings, "application/json"):
        raise _too_large(settings, len(body))
    # Validating up to 40 MiB of JSON and zipping its files is CPU work: off the event loop, which serves every read.
    return await run_in_threadpool(_parse_json, body)


def _parse_json(body: bytes) -> NewSubmission:
    try:
        payload = SubmissionCreate.model_validate_json(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors, body=None) from None
    name = payload.operator_name
    filename, data = f"{name or 'submission'}.zip", bundle_from_files(payload.files)  # checks names
    only = next(iter(payload.files)) if len(payload.files) == 1 else ""
    if only.endswith(".py"):
        filename, data = PurePosixPath(only).name, payload.files[only].encode()  # a single script
    return NewSubmission(filename=filename, data=data, modes=list(payload.modes), operator=name,
                                     cases=payload.cases, labels=payload.labels.model_dump(exclude_none=True),
                                     suite_run_id=payload.suite_run_id, pypto=payload.pypto,
                                     interactive=payload.interactive, fresh=payload.fresh)


async def _from_form(request: Request, settings: Settings) -> NewSubmission:
    async with request.form(max_files=1, max_fields=100, max_part_size=MAX_FIELD_BYTES) as form:
        return await _read_form(form, settings)


async def _read_form(form: FormData, settings: Settings) -> NewSubmission:
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise InvalidInput("multipart field 'file' (the package or script) is missing")
    data = await upload.read(settings.max_upload_bytes + 1)
    if len(data) > settings.max_upload_bytes:
        raise _too_large(settings, upload.size or len(data))
    text = {k: v for k, v in form.multi_items() if isinstance(v, str)}
    names = {text.get("operator"), text.get("name")} - {None, ""}
    if len(names) > 1:
        raise InvalidInput("give 'name' or 'operator', not two different names")
    raw_suite = text.get("suite_run_id") or None
    if raw_suite is not None and not (raw_suite.strip().isdigit() and 1 <= int(raw_suite) < 2**63):
        raise InvalidInput(f"suite_run_id must be an integer (positive, 64-bit), got {raw_suite[:40]!r}")
    labels = {k: text[k] for k in ("branch", "commit", "author") if text.get(k)}
    interactive, fresh = (_flag(text, k) for k in ("interactive", "fresh"))
    return NewSubmission(
        filename=upload.filename or "submission", data=data, operator=names.pop() if names else None,
        modes=_split_repeatable([str(v) for v in form.getlist("modes")]) or ["sim"],
        cases=_split_repeatable([str(v) for v in form.getlist("cases")]), labels=labels,
        suite_run_id=int(raw_suite) if raw_suite else None, pypto=text.get("pypto") or None,
        interactive=interactive, fresh=fresh)


def _flag(text: dict[str, str], key: str) -> bool:
    value = (text.get(key) or "false").strip().lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidInput(f"{key} must be true or false, got {value[:40]!r}")
    return value in ("true", "1")


async def read(request: Request, settings: Settings) -> NewSubmission:
    """Parse either body form into a NewSubmission, refusing oversize uploads early."""
    ctype = request.headers.get("content-type", "").lower()
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > _body_limit(settings, ctype):
        raise _too_large(settings, int(length))
    if ctype.startswith("application/json"):
        return await _from_json(request, settings)
    if ctype.startswith("multipart/form-data"):
        return await _from_form(request, settings)
    raise InvalidInput("send multipart/form-data (field 'file') or application/json ('files')")
