"""Suite runs: open one (idempotent by suite and run key), add pending, reused and stored results,
close it, and settle it once every result is in.

Lifecycle: `open` (created) -> closed by its client (`closed_at`: every operator is submitted)
-> `finished` once no result is pending. Uploads finish a run at once and finish it again when
more results arrive, so its totals and comparison always cover what it holds.
"""
from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from runtime.modes import MODES
from server.errors import InvalidInput, NotFound
from server.models import CaseResult, Job, Submission, Suite, SuiteRun, SuiteRunResult
from server.models.base import utcnow
from server.models.job import FINISHED as JOB_FINISHED
from server.models.suite_run import DONE, FINISHED, FROM_WORKER, OPEN, PENDING, REUSED
from server.services import names, ownership

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
LABEL_KEYS_MAX = 20
LABEL_VALUE_MAX = 500
SCRIPT_CASES = "*"  # a script's cases are known only once it runs: one pending row stands for them


def check_name(what: str, value: str) -> str:
    value = (value or "").strip()
    if not NAME.match(value):
        raise InvalidInput(f"{what} {value!r}: use 1-200 letters, digits and . _ : / @ + - (starting with a "
                           "letter or digit)")
    return value


def check_labels(labels: dict[str, Any]) -> dict[str, str]:
    if len(labels) > LABEL_KEYS_MAX:
        raise InvalidInput(f"at most {LABEL_KEYS_MAX} labels")
    out = {}
    for k, v in labels.items():
        if not re.match(r"^[A-Za-z][A-Za-z0-9_.-]{0,49}$", str(k)):
            raise InvalidInput(f"label name {k!r}: use letters, digits, _ . - (at most 50)")
        if v is None or str(v) == "":
            continue
        if len(str(v)) > LABEL_VALUE_MAX:
            raise InvalidInput(f"label {k!r} is longer than {LABEL_VALUE_MAX} characters")
        out[str(k)] = names.check(f"label {k!r}", str(v))
    return out


def get_suite(session: Session, name: str) -> Suite:
    suite = session.scalar(select(Suite).where(Suite.name == name))
    if suite is None:
        raise NotFound(f"no suite {name!r}")
    return suite


def get_or_create_suite(session: Session, name: str, created_by: str) -> Suite:
    name = check_name("suite name", name)
    suite = session.scalar(select(Suite).where(Suite.name == name))
    if suite is None:
        suite = Suite(name=name, created_by=created_by)
        session.add(suite)
        session.flush()
    return suite


def get_run(session: Session, run_id: int) -> SuiteRun:
    run = session.get(SuiteRun, run_id)
    if run is None:
        raise NotFound(f"no suite run {run_id}")
    return run


def open_run(session: Session, suite_name: str, run_key: str, labels: dict[str, Any], modes: list[str],
             reuse: bool, created_by: str, admin: bool) -> tuple[SuiteRun, bool]:
    """(run, created): the run of this suite with this key, made if new (a retried call finds it).
    Only the suite's owner (or an admin) opens runs in it: PermissionDenied otherwise."""
    run_key = check_name("run key", run_key)
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise InvalidInput(f"unknown mode(s) {', '.join(bad)}; use sim and/or npu")
    labels = check_labels(labels)
    suite = get_or_create_suite(session, suite_name, created_by)
    ownership.check_suite(suite, created_by, admin)
    run = session.scalar(select(SuiteRun).where(SuiteRun.suite_id == suite.id, SuiteRun.run_key == run_key))
    if run is not None:
        return run, False
    run = SuiteRun(suite_id=suite.id, name=suite.name, run_key=run_key, labels=labels,
                   branch=labels.get("branch"), commit=labels.get("commit"), pipeline_url=labels.get("pipeline"),
                   modes=list(dict.fromkeys(modes)), reuse=reuse, status=OPEN, created_by=created_by,
                   created_at=utcnow(), totals={}, compare={})
    session.add(run)
    session.flush()
    return run, True


def operator_rows(session: Session, run_id: int, operator: str) -> list[SuiteRunResult]:
    return list(session.scalars(select(SuiteRunResult).where(SuiteRunResult.suite_run_id == run_id,
                                                             SuiteRunResult.operator == operator)))


def add_pending(session: Session, run: SuiteRun, operator: str, cases: list[str], job: Job,
                content_sha256: str | None) -> None:
    session.add_all([SuiteRunResult(suite_run_id=run.id, operator=operator, case=c, mode=job.mode, attempt=1,
                                    status=PENDING, source=FROM_WORKER, job_id=job.id,
                                    content_sha256=content_sha256, diagnosis_rules="", note="", flips=0,
                                    verified=True) for c in cases])


def add_reused(session: Session, run: SuiteRun, operator: str, mode: str, found: dict[str, CaseResult]) -> None:
    session.add_all([SuiteRunResult(
        suite_run_id=run.id, operator=operator, case=case, mode=mode, attempt=1, status=DONE, verdict=r.verdict,
        source=REUSED, case_result_id=r.id, job_id=r.job_id, reused_from_job_id=r.job_id,
        content_sha256=r.content_sha256, max_abs_diff=r.max_abs_diff, graph_max_abs_diff=r.graph_max_abs_diff,
        diagnosis_rules=r.diagnosis_rules or "", verified=r.verified, flips=0, note=f"reused from job {r.job_id}")
        for case, r in sorted(found.items())])


def from_result(row: SuiteRunResult, r: CaseResult) -> None:
    row.status, row.verdict, row.case_result_id, row.job_id = DONE, r.verdict, r.id, r.job_id
    row.max_abs_diff, row.graph_max_abs_diff = r.max_abs_diff, r.graph_max_abs_diff
    row.diagnosis_rules, row.verified, row.note = r.diagnosis_rules or "", r.verified, ""
    row.content_sha256 = r.content_sha256 or row.content_sha256


def job_stored(session: Session, job: Job, sub: Submission | None) -> None:
    """The results.store hook: the job's case results replace its rows in the suite run."""
    if sub is None or sub.suite_run_id is None:
        return
    run = session.get(SuiteRun, sub.suite_run_id)
    if run is None:
        return
    existing = {r.case: r for r in session.scalars(select(SuiteRunResult).where(
        SuiteRunResult.suite_run_id == run.id, SuiteRunResult.job_id == job.id))}
    stored = list(session.scalars(select(CaseResult).where(CaseResult.job_id == job.id)))
    for r in stored:
        row = existing.pop(r.case, None)
        if row is None:
            row = SuiteRunResult(suite_run_id=run.id, operator=sub.operator, case=r.case, mode=job.mode, attempt=1,
                                 source=FROM_WORKER, flips=0)
            session.add(row)
        from_result(row, r)
    for case, row in existing.items():
        if case == SCRIPT_CASES and stored:
            session.delete(row)
        else:
            _not_run(row, job)
    session.flush()
    settle(session, run)


def _not_run(row: SuiteRunResult, job: Job) -> None:
    row.status, row.verdict = DONE, "not_run"
    row.note = f"job {job.id} {job.status}" + (f": {job.error}" if job.error else ": no result for this case")
    row.note = row.note[:300]


def settle(session: Session, run: SuiteRun) -> bool:
    """Resolve rows of jobs that ended without reporting; finish the run once closed and complete.
    True when this call finished it."""
    if run.status != OPEN:
        return False
    stuck = session.execute(select(SuiteRunResult, Job).join(Job, Job.id == SuiteRunResult.job_id).where(
        SuiteRunResult.suite_run_id == run.id, SuiteRunResult.status == PENDING, Job.status.in_(JOB_FINISHED)))
    for row, job in stuck:
        _not_run(row, job)
    session.flush()
    if run.closed_at is None or pending_count(session, run.id):
        return False
    # Compare-and-set: of two concurrent settlers, one finishes (and notifies) the run.
    won = session.execute(update(SuiteRun).where(SuiteRun.id == run.id, SuiteRun.status == OPEN)
                          .values(status=FINISHED).execution_options(synchronize_session=False)).rowcount == 1
    session.refresh(run)
    if won:
        from server.services import suite_finish

        suite_finish.finish(session, run)
    return won


def pending_count(session: Session, run_id: int) -> int:
    return int(session.scalar(select(func.count()).select_from(SuiteRunResult).where(
        SuiteRunResult.suite_run_id == run_id, SuiteRunResult.status == PENDING)) or 0)


def close(session: Session, run: SuiteRun) -> SuiteRun:
    """The client submitted every operator: the run finishes once its results are in."""
    if run.closed_at is None:
        run.closed_at = utcnow()
        session.flush()
    settle(session, run)
    return run


def progress(session: Session, run_id: int) -> dict[str, int]:
    """Counts per state: pending rows by their job's status, done rows by source."""
    out: dict[str, int] = {}
    rows = session.execute(select(SuiteRunResult.status, Job.status, SuiteRunResult.source, func.count())
                           .outerjoin(Job, Job.id == SuiteRunResult.job_id)
                           .where(SuiteRunResult.suite_run_id == run_id)
                           .group_by(SuiteRunResult.status, Job.status, SuiteRunResult.source))
    for status, job_status, source, n in rows:
        name = (job_status or "queued") if status == PENDING else ("reused" if source == REUSED else
                                                                    "uploaded" if source != FROM_WORKER else "done")
        out[name] = out.get(name, 0) + int(n)
    return out
