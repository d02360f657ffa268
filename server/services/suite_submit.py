"""Submit one operator into a suite run: link unchanged results (reuse), create jobs for the rest.

Per mode, an operator is reused whole or run whole: reuse needs every selected case to have a
result under the same key (server/services/reuse.py), the run to allow reuse, and none of the
operator's cases in that mode to be flaky on this branch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from jobqueue import queue_name
from runtime.modes import MODES
from server.blobs import BlobStore
from server.config import Settings
from server.errors import Conflict, InvalidInput
from server.models import Job, Suite, SuiteRun, SuiteRunResult
from server.models.suite_run import FINISHED
from server.services import flaky, pypto_route, reuse, submissions, suite_runs


@dataclass
class OperatorSubmitted:
    operator: str
    submission_id: int | None
    jobs: list[Job] = field(default_factory=list)
    reused: dict[str, list[int]] = field(default_factory=dict)  # mode -> the jobs results were reused from
    notes: dict[str, str] = field(default_factory=dict)  # mode -> why it was not reused
    cases: list[str] = field(default_factory=list)
    replay: bool = False


def flaky_cases(session: Session, run: SuiteRun, suite: Suite, operator: str, mode: str) -> list[str]:
    """This operator's cases flaky in `mode` as of the suite's last finished run on the branch."""
    branch = SuiteRun.branch.is_(None) if run.branch is None else SuiteRun.branch == run.branch
    last = session.scalar(select(SuiteRun.id).where(SuiteRun.suite_id == suite.id, branch,
                                                    SuiteRun.status == FINISHED, SuiteRun.id < run.id)
                          .order_by(SuiteRun.id.desc()).limit(1))
    if last is None:
        return []
    rows = session.execute(select(SuiteRunResult.case, SuiteRunResult.flips).where(
        SuiteRunResult.suite_run_id == last, SuiteRunResult.operator == operator, SuiteRunResult.mode == mode))
    return sorted({case for case, flips in rows if flaky.is_flaky(flips, suite.flaky_min_flips)})


def _replay(session: Session, run: SuiteRun, operator: str, content: str,
            existing: list[SuiteRunResult]) -> OperatorSubmitted:
    """The operator is already in the run: the same content is a retried call, other content a conflict."""
    if any(r.content_sha256 and r.content_sha256 != content for r in existing):
        raise Conflict(f"operator {operator!r} is already in suite run {run.id} with different files")
    job_ids = sorted({r.job_id for r in existing if r.job_id and r.reused_from_job_id is None})
    jobs = list(session.scalars(select(Job).where(Job.id.in_(job_ids)).order_by(Job.id))) if job_ids else []
    reused: dict[str, list[int]] = {}
    for r in existing:
        if r.reused_from_job_id:
            reused.setdefault(r.mode, [])
            if r.reused_from_job_id not in reused[r.mode]:
                reused[r.mode].append(r.reused_from_job_id)
    return OperatorSubmitted(operator, jobs[0].submission_id if jobs else None, jobs, reused,
                             cases=sorted({r.case for r in existing}), replay=True)


def submit_operator(session: Session, store: BlobStore, settings: Settings, run: SuiteRun,
                    new: submissions.NewSubmission) -> OperatorSubmitted:
    if run.closed_at is not None:
        raise Conflict(f"suite run {run.id} is closed: start a new run (another run key) to submit more")
    modes = list(dict.fromkeys(new.modes or run.modes or ["sim"]))
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise InvalidInput(f"unknown mode(s) {', '.join(bad)}; use sim and/or npu")
    checked = submissions.inspect_bundle(new.filename, new.data)
    operator = (new.operator or checked.name).strip()
    existing = suite_runs.operator_rows(session, run.id, operator)
    if existing:
        return _replay(session, run, operator, checked.sha256, existing)
    known = [c.id for c in checked.case_file.cases] if checked.case_file else None
    if known is not None and new.cases:
        unknown = [c for c in new.cases if c not in known]
        if unknown:
            raise InvalidInput(f"unknown case id(s) {', '.join(unknown)}; known: {', '.join(known)}")
    cases = list(new.cases) or known or [suite_runs.SCRIPT_CASES]
    suite = session.get(Suite, run.suite_id)
    assert suite is not None
    out = OperatorSubmitted(operator, None, cases=cases)
    found_by_mode, to_run = {}, []
    version = pypto_route.requested_version(new.pypto, checked.case_file.requires_pypto if checked.case_file else None)
    for mode in modes:
        found, note = _reusable(session, settings, run, suite, operator, checked.sha256, cases, mode,
                                queue_name(mode, version))
        if found is not None:
            found_by_mode[mode] = found
        else:
            to_run.append(mode)
            out.notes[mode] = note
    if to_run:
        sub, jobs, _ = submissions.create(session, store, settings, submissions.NewSubmission(
            filename=new.filename, data=new.data, modes=to_run, operator=operator, cases=list(new.cases),
            labels=dict(run.labels), suite_run_id=run.id, submitted_by=new.submitted_by, pypto=new.pypto))
        out.submission_id, out.jobs = sub.id, jobs
        for job in jobs:
            suite_runs.add_pending(session, run, operator, cases, job, checked.sha256)
    for mode, found in found_by_mode.items():
        suite_runs.add_reused(session, run, operator, mode, found)
        out.reused[mode] = sorted({r.job_id for r in found.values()})
        if cases == [suite_runs.SCRIPT_CASES]:
            out.cases = sorted(found)
    session.flush()
    return out


def _reusable(session: Session, settings: Settings, run: SuiteRun, suite: Suite, operator: str, content: str,
              cases: list[str], mode: str, queue: str) -> tuple[dict[str, Any] | None, str]:
    """(case -> earlier result, "") when the whole mode can be reused, else (None, why not)."""
    if not run.reuse:
        return None, "reuse is off for this run (--no-reuse)"
    flaky_now = flaky_cases(session, run, suite, operator, mode)
    if flaky_now:
        return None, f"flaky case(s) {', '.join(flaky_now[:5])} always run"
    target = reuse.target_versions(session, queue, settings.job_heartbeat_s)  # its pypto's workers
    if target.versions is None:
        return None, target.reason
    if cases == [suite_runs.SCRIPT_CASES]:  # a test script or module: the cases its last whole run found
        found = reuse.find_whole(session, operator, content, mode, target.versions)
        return (found, "") if found else (None, "no earlier whole run of these files under the same key")
    found = reuse.find(session, content, cases, mode, target.versions)
    if len(found) < len(cases):
        return None, ("no earlier result under the same key" if not found else
                      f"{len(cases) - len(found)} of {len(cases)} case(s) have no earlier result under the same key")
    return found, ""
