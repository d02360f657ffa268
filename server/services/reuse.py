"""Reuse of unchanged results: a nightly run links last night's result instead of running it again.

The key of a case result is the sha256 of: the operator's content hash (the runtime's digest over
the files the job needs), the case id, the mode, the pypto, torch and CANN versions and the
runtime's own version. A new run can reuse an earlier result only when the workers that would run
it now all report the same versions (their heartbeats); otherwise it runs.

A test script's or test module's cases are known only once it runs, so its reuse looks up the
newest finished job of the same operator and mode and takes all of that job's cases when every
one of them carries the key it would get now (`find_whole`): every route is reused alike
(docs/ci.md, "Reuse of unchanged results").
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runtime import verdicts
from runtime.evidence import graph_verify
from server.models import CaseResult, Job, Submission, Worker
from server.models.job import FAILED, SUCCEEDED
from server.services.workers import is_online

VERSION_FIELDS = ("pypto", "torch", "cann", "runtime")
NOT_REUSABLE = (verdicts.TIMEOUT,)  # a timeout says as much about the host's load as about the kernel


def reusable_verdict(verdict: str) -> bool:
    return verdict not in NOT_REUSABLE


def reusable_report(report: dict[str, Any] | None) -> bool:
    """False for a SIM case that ran without graph verify because its worker's calculator was not ready
    (still being built on a fresh worker): its missing evidence is the host's, and the next run has it."""
    gv = (report or {}).get("graph_verify")
    return not (isinstance(gv, dict) and gv.get("rule") == graph_verify.CALCULATOR_NOT_READY)


def key(content_sha256: str | None, case: str, mode: str, versions: dict[str, Any]) -> str | None:
    """The reuse key, or None when something it needs is unknown."""
    if not content_sha256 or not versions.get("pypto") or not versions.get("runtime"):
        return None
    parts = [content_sha256, case, mode] + [str(versions.get(name) or "") for name in VERSION_FIELDS]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass
class Target:
    """The versions a new run of a mode would use, or why that is unknown."""
    versions: dict[str, Any] | None
    reason: str = ""


def target_versions(session: Session, mode: str, heartbeat_s: float) -> Target:
    """The versions of the online workers that serve `mode`'s queue (`sim`, or `sim@0.3.0` for jobs that ask
    for a pypto: docs/versions.md §3): one set, or no reuse."""
    sets = []
    for w in session.scalars(select(Worker)):
        if mode in (w.queues or []) and is_online(w, heartbeat_s):
            v = (w.capabilities or {}).get("versions") or {}
            sets.append({name: v.get(name) for name in VERSION_FIELDS})
    if not sets:
        return Target(None, f"no online {mode} worker reports its versions")
    distinct = {tuple(sorted((k, str(v)) for k, v in s.items())) for s in sets}
    if len(distinct) > 1:
        return Target(None, f"the online {mode} workers run different versions")
    if not sets[0].get("runtime"):
        return Target(None, f"the {mode} workers do not report the runtime's version")
    return Target(sets[0])


def find(session: Session, content_sha256: str, cases: list[str], mode: str,
         versions: dict[str, Any]) -> dict[str, CaseResult]:
    """case -> the newest reusable result with the same key (from a job that finished normally)."""
    keys = {key(content_sha256, c, mode, versions): c for c in cases}
    keys.pop(None, None)
    if not keys:
        return {}
    stmt = (select(CaseResult).join(Job, Job.id == CaseResult.job_id)
            .where(CaseResult.reuse_key.in_(list(keys)), Job.status.in_((SUCCEEDED, FAILED)))
            .order_by(CaseResult.id.desc()))
    found: dict[str, CaseResult] = {}
    for row in session.scalars(stmt):
        case = keys[row.reuse_key]
        found.setdefault(case, row)
    return found


RECENT_JOBS = 5  # how far back find_whole looks for this operator's last whole run in a mode


def find_whole(session: Session, operator: str, content_sha256: str, mode: str,
               versions: dict[str, Any]) -> dict[str, CaseResult]:
    """case -> result of the newest finished job that ran every case of this operator's content in
    `mode` (no case filter), when all its results are reusable under today's versions; else {}."""
    stmt = (select(Job.id).join(Submission, Submission.id == Job.submission_id)
            .where(Submission.operator == operator, Job.mode == mode, Job.status.in_((SUCCEEDED, FAILED)))
            .order_by(Job.id.desc()).limit(RECENT_JOBS))
    for job_id in session.scalars(stmt):
        sub_filter = session.scalar(select(Submission.case_filter).join(Job, Job.submission_id == Submission.id)
                                    .where(Job.id == job_id))
        rows = list(session.scalars(select(CaseResult).where(CaseResult.job_id == job_id)))
        if sub_filter or not rows or any(r.content_sha256 != content_sha256 for r in rows):
            continue
        if all(r.reuse_key and r.reuse_key == key(content_sha256, r.case, mode, versions) for r in rows):
            return {r.case: r for r in rows}
        return {}  # the newest whole run of this content is not reusable (a timeout, other versions)
    return {}


def earlier_job(session: Session, operator: str, content_sha256: str, cases: list[str] | None, mode: str,
                queue: str, heartbeat_s: float) -> int | None:
    """The one finished job whose results an identical submission of `cases` (None: a script's whole run) in
    `mode` would get again under today's versions: linked, never copied (docs/service.md §6); else None."""
    target = target_versions(session, queue, heartbeat_s)
    if target.versions is None:
        return None
    found = find_whole(session, operator, content_sha256, mode, target.versions) if cases is None \
        else find(session, content_sha256, cases, mode, target.versions)
    if not found or (cases is not None and len(found) < len(cases)):
        return None
    jobs = {r.job_id for r in found.values()}
    return jobs.pop() if len(jobs) == 1 else None  # results spread over several jobs: run it whole again
