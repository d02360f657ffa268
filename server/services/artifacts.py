"""A job's artifacts: unpack a worker's tarball safely, list files, read per-case logs."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import IO, Any

from sqlalchemy.orm import Session

from runtime.intake import archive
from server.blobs import BlobStore
from server.errors import InvalidInput
from server.models import Job
from server.services import results
from server.services.queries import job_cases

ARTIFACT_LIMITS = archive.Limits(members=5000, unpacked_bytes=1024 * 1024 * 1024, archive_bytes=None)  # the route bounds it


def stage(blobs: BlobStore, job_id: int, attempt: int, fileobj: IO[bytes]) -> Path:
    """Check every member of a .tar.gz and unpack it into a private staging folder.

    The tarball comes from a worker that ran untrusted kernel code, so it goes through the one
    archive reader (runtime/intake/archive.py: relative names, no links or devices, bounded size);
    anything it refuses is an InvalidInput naming the member.
    """
    staging = blobs.job_dir(job_id) / f".staging-attempt{attempt}-{uuid.uuid4().hex[:8]}"
    try:
        archive.unpack_stream(fileobj, "artifacts", staging, ARTIFACT_LIMITS)  # not .zip: read as a tarball
    except archive.UnsafeArchive as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InvalidInput(str(exc)) from None
    return staging


def publish(blobs: BlobStore, job_id: int, attempt: int, staging: Path) -> Path:
    """Move staged files to artifacts-attempt<N>/ (replacing an earlier partial copy)."""
    final = blobs.job_dir(job_id) / f"artifacts-attempt{attempt}"
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    return final


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def store_result(session: Session, blobs: BlobStore, job: Job, attempt: int, report: dict[str, Any] | None,
                 error: str | None, cancelled: bool, tarball: IO[bytes] | None, timed_out: bool = False) -> bool:
    """results.store plus the attempt's artifacts; the files are kept only when the result is."""
    staging = stage(blobs, job.id, attempt, tarball) if tarball is not None else None
    try:
        stored = results.store(session, blobs, job, attempt, report, error=error, cancelled=cancelled,
                               timed_out=timed_out)
    except BaseException:
        if staging:
            discard(staging)
        raise
    if staging:
        if stored:
            publish(blobs, job.id, attempt, staging)
        else:
            discard(staging)  # a duplicate or stale delivery: the first one's files stand
    return stored


def listing(blobs: BlobStore, job_id: int) -> list[tuple[str, int]]:
    """(path under the job folder, size in bytes) of every published file."""
    base = blobs.job_dir(job_id)
    out = []
    for rel in blobs.list_artifacts(job_id):
        if rel.startswith("."):
            continue  # staging folders of uploads in progress
        try:
            out.append((rel, (base / rel).stat().st_size))
        except FileNotFoundError:
            continue  # replaced by a concurrent upload of the same attempt
    return out


def case_logs(session: Session, job_id: int) -> list[dict[str, Any]]:
    """Each case's stdout, stderr and plog tails, as the runtime reported them."""
    out = []
    for row in job_cases(session, job_id):
        logs = (row.report or {}).get("logs") or {}
        out.append({"case": row.case, "verdict": row.verdict, "stdout": str(logs.get("stdout") or ""),
                    "stderr": str(logs.get("stderr") or ""), "plog": str(logs.get("plog") or "")})
    return out
