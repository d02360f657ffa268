"""Accept a submission: validate the bundle with the runtime's loader, store it, create jobs."""
from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from runtime.modes import MODES
from runtime.intake import archive
from runtime.intake import submission as runtime_submission
from runtime.intake.cases import check_memory
from runtime.errors import SubmissionError
from server.blobs import BlobStore
from server.config import Settings
from server.errors import Conflict, InvalidInput, PayloadTooLarge
from server.models import Job, Operator, Submission, SuiteRun
from server.models.base import utcnow
from server.models.job import INTERACTIVE
from server.services import audit, bounds, names, npu_wait, ownership, pypto_route, reuse

SUFFIXES = (".tar.gz", ".tgz", ".zip", ".py")
# The label naming the earlier jobs ("sim:12,npu:13") an identical submission linked instead of running.
REUSED_LABEL = "reused_jobs"


@dataclass
class NewSubmission:
    filename: str
    data: bytes
    modes: list[str] = field(default_factory=lambda: ["sim"])
    operator: str | None = None
    cases: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    suite_run_id: int | None = None
    idempotency_key: str | None = None
    submitted_by: str = ""
    token_id: int | None = None  # the caller's token: Idempotency-Keys are unique per token
    pypto: str | None = None  # the pypto version asked for (server/services/pypto_route.py)
    interactive: bool = False  # someone waits for it (submit --wait, the dashboard): dispatched first
    fresh: bool = False  # run it even when an identical submission's results could be reused
    reused: dict[str, int] = field(default_factory=dict)  # set by create(): mode -> the earlier job linked
    admin: bool = False  # the caller may submit into any tenant's suite run

    def request_fields(self) -> dict[str, Any]:
        """What an Idempotency-Key replay must repeat: the bundle and everything that shapes the jobs."""
        return {"bundle": hashlib.sha256(self.data).hexdigest(), "modes": list(dict.fromkeys(self.modes or ["sim"])),
                "operator": (self.operator or "").strip(), "cases": list(self.cases),
                "labels": {k: str(v) for k, v in sorted((self.labels or {}).items()) if v not in (None, "")},
                "suite_run_id": self.suite_run_id,
                **({"pypto": self.pypto} if self.pypto else {})}  # absent when unset: older keys still match

    def request_sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.request_fields(), sort_keys=True).encode()).hexdigest()


def bundle_from_files(files: dict[str, str]) -> bytes:
    """A deterministic zip of {path: text}, so identical files give an identical sha256."""
    if not files:
        raise InvalidInput("'files' is empty")
    members = []
    for name, text in files.items():
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts or not name.strip():
            raise InvalidInput(f"bad file name {name!r} in 'files'")
        names.check("file name", name)
        if not isinstance(text, str):
            raise InvalidInput(f"'files'[{name!r}] must be text")
        members.append((pure.as_posix(), text.encode()))
    return archive.write_zip(members)


def _suffix(filename: str) -> str:
    lower = filename.lower()
    for suffix in SUFFIXES:
        if lower.endswith(suffix):
            return suffix
    raise InvalidInput(f"{filename!r}: upload an operator package (.zip, .tar.gz) or a single .py script")


def inspect_bundle(filename: str, data: bytes) -> runtime_submission.Submission:
    """Validate with the runtime's own loader (no torch, no pypto needed)."""
    suffix = _suffix(names.check("file name", filename))
    with tempfile.TemporaryDirectory(prefix="crosscheck-upload-") as tmp:
        name = Path(filename).name if suffix != ".py" else Path(filename).name or "kernel.py"
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            return runtime_submission.load(path, Path(tmp) / "work")
        except SubmissionError as exc:
            raise InvalidInput(str(exc)) from None


def create(session: Session, store: BlobStore, settings: Settings, new: NewSubmission) -> tuple[Submission, list[Job], bool]:
    """(submission, jobs, created). With a known Idempotency-Key, the earlier submission is returned."""
    if new.idempotency_key:
        earlier = _earlier(session, new)
        if earlier is not None:
            _same_request_or_conflict(earlier, new)
            jobs = list(session.scalars(select(Job).where(Job.submission_id == earlier.id).order_by(Job.id)))
            new.reused = _reused_of(earlier)
            return earlier, jobs + [j for j in map(lambda i: session.get(Job, i), new.reused.values()) if j], False
    if len(new.data) > settings.max_upload_bytes:
        raise PayloadTooLarge(f"upload is {len(new.data)} bytes; the limit is {settings.max_upload_bytes}")
    modes = list(dict.fromkeys(new.modes or ["sim"]))
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise InvalidInput(f"unknown mode(s) {', '.join(bad)}; use sim and/or npu")
    if new.suite_run_id is not None:
        run = session.get(SuiteRun, new.suite_run_id)
        if run is None:
            raise InvalidInput(f"no suite run {new.suite_run_id}")
        ownership.check_run(run, new.submitted_by, new.admin)  # as POST /suite-runs/{id}/submissions does
    for case in new.cases:
        names.check("case id", case)
    checked = inspect_bundle(new.filename, new.data)
    if checked.case_file is not None:
        try:
            if settings.case_memory_gib is not None:  # unset: each worker checks against its own host's share
                check_memory(checked.case_file, int(settings.case_memory_gib * 2**30),
                             flag="the server's CASE_MEMORY_GIB")
        except SubmissionError as exc:
            raise InvalidInput(str(exc)) from None
    known = [c.id for c in checked.case_file.cases] if checked.case_file else None
    if known is not None and new.cases:
        unknown = [c for c in new.cases if c not in known]
        if unknown:
            raise InvalidInput(f"unknown case id(s) {', '.join(unknown)}; known: {', '.join(known)}")
    n_cases = len(new.cases) or (len(known) if known else 1)
    bounds.check_submission(settings, n_cases)
    operator_name = (new.operator or checked.name).strip()
    if not operator_name or len(operator_name) > 200:
        raise InvalidInput("operator name must be 1-200 characters")
    names.check("operator name", operator_name)
    version = pypto_route.requested_version(
        new.pypto, checked.case_file.requires_pypto if checked.case_file else None)
    queues = pypto_route.queues_for(modes, version)
    if not new.fresh and new.suite_run_id is None:  # a suite run reuses through its own path (suite_submit)
        wanted = list(new.cases) or known  # None: a script's or test module's whole run
        new.reused = {m: j for m in modes if (j := reuse.earlier_job(
            session, operator_name, checked.sha256, wanted, m, queues[m], settings.job_heartbeat_s))}
    to_run = [m for m in modes if m not in new.reused]
    bounds.check_quota(session, settings, new.token_id, n_cases, len(to_run))
    if to_run:  # Conflict when no online worker has that pypto
        pypto_route.check_served(session, settings, {m: queues[m] for m in to_run})
    digest, rel = store.put_bundle(new.data, _suffix(new.filename))
    operator = _get_or_create_operator(session, operator_name, new.submitted_by)
    labels = {k: names.check(f"label {k!r}", str(v)) for k, v in (new.labels or {}).items() if v not in (None, "")}
    if new.reused:  # kept with the submission: a replay of its Idempotency-Key links the same jobs
        labels[REUSED_LABEL] = ",".join(f"{m}:{j}" for m, j in new.reused.items())
    sub = Submission(operator=operator_name, kind=checked.kind, filename=Path(new.filename).name, bundle_sha256=digest,
                     blob_path=rel, modes=modes, case_filter=list(new.cases), labels=labels,
                     branch=labels.get("branch"), commit=labels.get("commit"), author=labels.get("author"),
                     suite_run_id=new.suite_run_id, idempotency_key=new.idempotency_key,
                     created_by=new.submitted_by, token_id=new.token_id, request_sha256=new.request_sha256())
    session.add(sub)
    session.flush()
    audit.record(session, new.submitted_by, audit.SUBMIT, f"submission {sub.id}", new.token_id,
                 operator=operator_name, modes=modes, bundle_sha256=digest)
    jobs = [Job(submission_id=sub.id, operator_id=operator.id, mode=mode, queue=queues[mode],
                timeout_s=bounds.job_time_limit_s(settings, n_cases), case_count=n_cases,
                submitted_by=new.submitted_by, queued_at=utcnow(), priority=INTERACTIVE if new.interactive else 0)
            for mode in to_run]
    session.add_all(jobs)
    session.flush()
    npu_wait.on_create(session, settings, jobs)  # awaiting_npu when no NPU worker is online
    return sub, jobs + [j for j in map(lambda i: session.get(Job, i), new.reused.values()) if j], True


def _reused_of(sub: Submission) -> dict[str, int]:
    """mode -> the earlier job a submission linked instead of running (its REUSED_LABEL)."""
    pairs = [p.split(":", 1) for p in str((sub.labels or {}).get(REUSED_LABEL) or "").split(",") if ":" in p]
    return {m: int(j) for m, j in pairs if j.isdigit()}


def _earlier(session: Session, new: NewSubmission) -> Submission | None:
    """The submission this token already made with this Idempotency-Key (keys are per token)."""
    owner = Submission.token_id.is_(None) if new.token_id is None else Submission.token_id == new.token_id
    return session.scalar(select(Submission).where(Submission.idempotency_key == new.idempotency_key, owner))


def _same_request_or_conflict(earlier: Submission, new: NewSubmission) -> None:
    """A replay must repeat the request; a different body under the same key is a 409 naming what differs."""
    if earlier.request_sha256 is None:  # stored before requests were fingerprinted: the bundle is all we have
        same = earlier.bundle_sha256 == hashlib.sha256(new.data).hexdigest()
        differs = [] if same else ["bundle"]
    else:
        same = earlier.request_sha256 == new.request_sha256()
        was = {"bundle": earlier.bundle_sha256, "modes": list(earlier.modes), "cases": list(earlier.case_filter),
               "labels": dict(sorted((earlier.labels or {}).items())), "suite_run_id": earlier.suite_run_id}
        now = new.request_fields()
        differs = [k for k, v in was.items() if now[k] != v] or ["operator"]
    if not same:
        raise Conflict(f"Idempotency-Key {new.idempotency_key!r} was already used by this token for a different "
                       f"request ({', '.join(differs)} differ); send the same request to replay it, or use a new key")


def create_once(session: Session, store: BlobStore, settings: Settings,
                new: NewSubmission) -> tuple[Submission, list[Job], bool]:
    """create(), tried once more after losing a unique-key race to a concurrent request.

    Two requests with one Idempotency-Key (a client retrying while its first try is still being
    processed), or two first submissions of one operator, both pass their "does it exist?" check;
    the second insert then fails on the unique index once the first commits. Rolling back and
    creating again finds the winner's rows: a replay, a Conflict, or the existing operator.
    """
    try:
        return create(session, store, settings, new)
    except IntegrityError:
        session.rollback()
        return create(session, store, settings, new)


def _get_or_create_operator(session: Session, name: str, owner: str) -> Operator:
    operator = session.scalar(select(Operator).where(Operator.name == name))
    if operator is None:
        operator = Operator(name=name, owner=owner or None)
        session.add(operator)
        session.flush()
    return operator
