"""Where a stored result came from, and whether its environment fingerprint is complete.

Every case result names its source: a worker (`source_name` = the worker, `device` = its card) or
an upload (`source_name` = the token's name). A result is **verified** only when its fingerprint
names the pypto version and, for NPU results, the CANN version and the device. An uploaded NPU
figure without them cannot be told apart from a forged one: it is shown as unverified and never
becomes a case's latest result (server/services/ingest.py, docs/ci.md).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from server.models import CaseResult
from server.services import reuse

WORKER, UPLOAD = "worker", "upload"
UNKNOWN_VALUES = ("", "unknown", "not installed", "none", "null")


def _known(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() not in UNKNOWN_VALUES


def missing_fingerprint(env: dict[str, Any], mode: str) -> list[str]:
    """Fingerprint fields a result of this mode needs and lacks."""
    needed = ("pypto", "cann", "device") if mode == "npu" else ("pypto",)
    return [name for name in needed if not _known(env.get(name))]


def values(*, source: str, source_name: str, env: dict[str, Any], mode: str, content_sha256: str | None,
           case: str, verdict: str, report: dict[str, Any] | None = None) -> dict[str, Any]:
    """The provenance columns of one result (`report`: the runtime's case dict, when there is one)."""
    verified = not missing_fingerprint(env, mode)
    device = env.get("device") if _known(env.get("device")) else None
    # Only results a worker produced may stand in for a new run of the same kernel.
    reusable = source == WORKER and verified and reuse.reusable_verdict(verdict) and reuse.reusable_report(report)
    return {"source": source, "source_name": (source_name or "")[:200], "device": str(device)[:64] if device else None,
            "verified": verified, "content_sha256": content_sha256,
            "reuse_key": reuse.key(content_sha256, case, mode, env) if reusable else None}


def stamp(rows: Iterable[CaseResult], *, source: str, source_name: str, env: dict[str, Any], mode: str,
          content_sha256: str | None) -> None:
    """Set provenance on rows about to be stored (before the flush: no extra UPDATEs)."""
    for row in rows:
        for name, value in values(source=source, source_name=source_name, env=env, mode=mode,
                                  content_sha256=content_sha256, case=row.case, verdict=row.verdict,
                                  report=row.report).items():
            setattr(row, name, value)


def stamp_worker_rows(job: Any, report: dict[str, Any], rows: list[CaseResult]) -> None:
    """The results.store hook: a worker's rows carry the worker, its card and the report's fingerprint."""
    env = report.get("environment") or {}
    content = (report.get("submission") or {}).get("sha256")
    stamp(rows, source=WORKER, source_name=job.worker or "", env=env, mode=job.mode,
          content_sha256=content if isinstance(content, str) and len(content) == 64 else None)
    for row in rows:
        row.token_id = job.claim_token_id  # the token that claimed the attempt, and so posted this


def describe(row: Any) -> str:
    """One line for the dashboard and JUnit: `worker w1 · npu:0` or `upload by ci-lab · unverified`."""
    who = f"worker {row.source_name}" if row.source == WORKER else f"upload by {row.source_name or 'unknown'}"
    parts = [who] + ([row.device] if row.device else []) + ([] if row.verified else ["unverified"])
    return " · ".join(parts)
