"""Tenants on actions: a token acts only on the jobs, submissions, suites, suite runs and operators it made
(or is admin). A tenant is a token name.

Reading stays open to every read token (the dashboard is shared); acting on another tenant's work
(cancel, retry, submitting into or closing its suite run, opening a run of its suite, uploading
results for its operator) is a 403 naming the owner's token.
"""
from __future__ import annotations

from sqlalchemy.orm import Session

from server.errors import PermissionDenied
from server.models import Job, Operator, Submission, Suite, SuiteRun


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


def check_suite(suite: Suite, name: str, admin: bool) -> None:
    """PermissionDenied unless the caller's token made this suite (or is an admin): a tenant's runs
    are its suite's regression baselines and decide its CI gate, so no other tenant adds runs to it."""
    if admin or (suite.created_by and suite.created_by == name):
        return
    raise PermissionDenied(f"suite {suite.name!r} belongs to {suite.created_by or 'another token'!r}: only the "
                           "token that made it, or an admin, may open runs in it; use a suite name of your own")


def check_operator(operator: Operator, name: str, admin: bool) -> None:
    """PermissionDenied unless the caller's token owns this operator (or is an admin): uploaded
    results set its verdict, so only its owner may upload them."""
    if admin or (operator.owner and operator.owner == name):
        return
    raise PermissionDenied(f"operator {operator.name!r} belongs to {operator.owner or 'no tenant (made before owners)'!r}: "
                           "only its owner, or an admin, may upload results for it")
