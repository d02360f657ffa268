"""A job's artifacts: unpack a worker's tarball safely, list files, read per-case logs."""
from __future__ import annotations

import shutil
import tarfile
import uuid
from pathlib import Path, PurePosixPath
from typing import IO, Any

from sqlalchemy.orm import Session

from server.blobs import BlobStore
from server.errors import InvalidInput
from server.models import Job
from server.services import results
from server.services.queries import job_cases

MAX_ARTIFACT_FILES = 5000
MAX_ARTIFACT_BYTES = 1024 * 1024 * 1024  # unpacked


def stage(blobs: BlobStore, job_id: int, attempt: int, fileobj: IO[bytes]) -> Path:
    """Check every member of a .tar.gz and unpack it into a private staging folder.

    Refused (InvalidInput): absolute names, `..`, links, devices and FIFOs, too many or too large
    files. The tarball comes from a worker that ran untrusted kernel code, so treat it as hostile.
    """
    staging = blobs.job_dir(job_id) / f".staging-attempt{attempt}-{uuid.uuid4().hex[:8]}"
    try:
        with tarfile.open(fileobj=fileobj, mode="r:gz") as tar:
            members = tar.getmembers()
            _check(members)
            staging.mkdir(parents=True)
            tar.extractall(staging, members=members, filter="data")  # a second guard on top of _check
    except (tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InvalidInput(f"artifacts must be a readable .tar.gz ({exc})") from None
    except InvalidInput:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging


def _check(members: list[tarfile.TarInfo]) -> None:
    if len(members) > MAX_ARTIFACT_FILES:
        raise InvalidInput(f"artifacts: {len(members)} entries; the limit is {MAX_ARTIFACT_FILES}")
    total = 0
    for m in members:
        pure = PurePosixPath(m.name)
        if pure.is_absolute() or ".." in pure.parts:
            raise InvalidInput(f"artifacts: entry {m.name!r} escapes the artifact folder")
        if m.issym() or m.islnk():
            raise InvalidInput(f"artifacts: entry {m.name!r} is a link; links are not accepted")
        if not (m.isfile() or m.isdir()):
            raise InvalidInput(f"artifacts: entry {m.name!r} is not a regular file or folder")
        total += m.size
    if total > MAX_ARTIFACT_BYTES:
        raise InvalidInput(f"artifacts: {total} bytes unpacked; the limit is {MAX_ARTIFACT_BYTES}")


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
