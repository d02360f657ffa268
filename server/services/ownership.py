"""Tenants on actions: a submit token acts only on the jobs, submissions and suite runs it made (or is admin).

Reading stays open to every read token (the dashboard is shared); acting on another tenant's work
(cancel, retry, submitting into or closing its suite run) is a 403 naming the owner's token.
"""
from __future__ import annotations

from sqlalchemy.orm import Session

from server.errors import PermissionDenied
from server.models import Job, Submission, SuiteRun


def owns_submission(submission: Submission, token_id: int | None, name: str) -> bool:
    if submission.token_id is not None:
        return submission.token_id == token_id
    # Submissions stored without a token (uploaded results) belong to the token name that uploaded them.
    return bool(submission.created_by) and submission.created_by == name


def check_job(session: Session, job: Job, token_id: int | None, name: str, admin: bool) -> None:
    """PermissionDenied unless the caller submitted this job (or is an admin)."""
    if admin:
        return
    submission = session.get(Submission, job.submission_id)
    if submission is None or not owns_submission(submission, token_id, name):
        owner = (submission.created_by if submission else "") or "another token"
        raise PermissionDenied(f"job {job.id} belongs to {owner!r}: only the token that submitted it, or an admin, "
                               "may act on it")


def check_run(run: SuiteRun, name: str, admin: bool) -> None:
    """PermissionDenied unless the caller's token opened this suite run (or is an admin)."""
    if admin or (run.created_by and run.created_by == name):
        return
    raise PermissionDenied(f"suite run {run.id} belongs to {run.created_by or 'another token'!r}: only the token "
                           "that opened it, or an admin, may submit into it or close it")
