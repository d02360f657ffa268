"""Bounded work per submission and per token (docs/SECURITY.md): checked before anything is stored.

A submission may hold at most MAX_CASES_PER_SUBMISSION cases; each of its jobs gets the cases' timeouts
plus overhead as its time limit, at most MAX_JOB_S; one token's jobs waiting or running may hold at
most MAX_QUEUED_CASES_PER_TOKEN cases. Each refusal names the setting an operator would raise.
"""
from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.errors import PayloadTooLarge, QuotaExceeded
from server.models import Job, Submission
from server.models.job import RUNNING, WAITING

JOB_OVERHEAD_S = 120.0  # warm parent start, discovery and reporting on top of the cases


def job_time_limit_s(settings: Settings, cases: int) -> float:
    return settings.case_timeout_s * cases + JOB_OVERHEAD_S


def check_submission(settings: Settings, cases: int) -> None:
    """PayloadTooLarge (413) when the submission's cases, or the time limit they give a job, pass the caps."""
    if cases > settings.max_cases_per_submission:
        raise PayloadTooLarge(f"the submission has {cases} cases; this server takes at most "
                              f"{settings.max_cases_per_submission} per submission (MAX_CASES_PER_SUBMISSION): "
                              "split it, or choose some of its cases (`cases`; crosscheck submit --case)")
    limit = job_time_limit_s(settings, cases)
    if limit > settings.max_job_s:
        raise PayloadTooLarge(f"{cases} cases of up to {settings.case_timeout_s:.0f} s each give a job a time "
                              f"limit of {limit:.0f} s; this server allows at most {settings.max_job_s:.0f} s per "
                              "job (MAX_JOB_S): submit fewer cases at a time")


def queued_cases(session: Session, token_id: int) -> int:
    """Cases of this token's jobs that are waiting or running."""
    total = session.scalar(select(func.coalesce(func.sum(Job.case_count), 0)).select_from(Job)
                           .join(Submission, Submission.id == Job.submission_id)
                           .where(Submission.token_id == token_id, Job.status.in_((*WAITING, RUNNING))))
    return int(total or 0)


def check_quota(session: Session, settings: Settings, token_id: int | None, cases: int, modes: int) -> None:
    """QuotaExceeded (429) when this token's waiting and running cases would pass its quota."""
    if token_id is None:  # made on the server itself (tests, commands): no tenant to bound
        return
    queued = queued_cases(session, token_id)
    if queued + cases * modes > settings.max_queued_cases_per_token:
        raise QuotaExceeded(f"this token has {queued} case(s) waiting or running; {cases * modes} more would pass "
                            f"its quota of {settings.max_queued_cases_per_token} (MAX_QUEUED_CASES_PER_TOKEN): "
                            "wait for its jobs to finish, or cancel some")
