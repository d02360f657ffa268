"""Read side of suite runs: lists, a run's results with filters, comparisons, deliveries."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from runtime import verdicts
from server.errors import InvalidInput
from server.models import CaseResult, Suite, SuiteRun, SuiteRunResult, WebhookDelivery
from server.services import flaky, suite_compare, suite_finish
from server.services.provenance import describe
from server.services.suite_runs import get_run

MAX_PAGE = 5000


@dataclass
class RunFilter:
    suite: str | None = None
    branch: str | None = None
    commit: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def list_runs(session: Session, f: RunFilter, cursor: int | None = None, limit: int = 50) -> tuple[list[SuiteRun], int | None]:
    """Newest first; keyset pagination on id."""
    limit = max(1, min(limit, 500))
    stmt = select(SuiteRun)
    if f.suite:
        stmt = stmt.where(SuiteRun.name == f.suite)
    if f.branch:
        stmt = stmt.where(SuiteRun.branch == f.branch)
    if f.commit:
        stmt = stmt.where(SuiteRun.commit.startswith(f.commit, autoescape=True))
    if f.since:
        stmt = stmt.where(SuiteRun.created_at >= f.since)
    if f.until:
        stmt = stmt.where(SuiteRun.created_at < f.until)
    if cursor is not None:
        stmt = stmt.where(SuiteRun.id < cursor)
    rows = list(session.scalars(stmt.order_by(SuiteRun.id.desc()).limit(limit + 1)))
    return rows[:limit], (rows[limit - 1].id if len(rows) > limit else None)


def list_suites(session: Session) -> list[tuple[Suite, SuiteRun | None]]:
    suites = list(session.scalars(select(Suite).order_by(Suite.name)))
    out = []
    for s in suites:
        out.append((s, session.scalar(select(SuiteRun).where(SuiteRun.suite_id == s.id)
                                      .order_by(SuiteRun.id.desc()).limit(1))))
    return out


@dataclass
class ResultFilter:
    verdict: list[str]
    mode: str | None = None
    operator: str | None = None
    source: str | None = None
    flaky_only: bool = False
    failing_only: bool = False


def run_results(session: Session, run: SuiteRun, f: ResultFilter, cursor: int | None = None,
                limit: int = 1000) -> tuple[list[dict[str, Any]], int | None]:
    """A run's results ordered by operator, case, mode (keyset on id), with provenance."""
    limit = max(1, min(limit, MAX_PAGE))
    suite = session.get(Suite, run.suite_id)
    min_flips = suite.flaky_min_flips if suite else 2
    stmt = (select(SuiteRunResult, CaseResult.source, CaseResult.source_name, CaseResult.device,
                   CaseResult.max_rel_diff, CaseResult.rtol, CaseResult.atol, CaseResult.error_type,
                   CaseResult.error_message, CaseResult.duration_s, CaseResult.graph_status, CaseResult.stage,
                   CaseResult.structural, CaseResult.kernel_launches)
            .outerjoin(CaseResult, CaseResult.id == SuiteRunResult.case_result_id)
            .where(SuiteRunResult.suite_run_id == run.id))
    if f.verdict:
        bad = [v for v in f.verdict if v not in verdicts.VERDICTS]
        if bad:
            raise InvalidInput(f"unknown verdict(s) {', '.join(bad)}; use {', '.join(verdicts.VERDICTS)}")
        stmt = stmt.where(SuiteRunResult.verdict.in_(f.verdict))
    if f.mode:
        stmt = stmt.where(SuiteRunResult.mode == f.mode)
    if f.operator:
        stmt = stmt.where(SuiteRunResult.operator == f.operator)
    if f.source:
        stmt = stmt.where(SuiteRunResult.source == f.source)
    if f.flaky_only:
        stmt = stmt.where(SuiteRunResult.flips >= max(1, min_flips))
    if f.failing_only:
        stmt = stmt.where(or_(*[and_(SuiteRunResult.mode == mode, SuiteRunResult.verdict.not_in(ok))
                                for mode, ok in verdicts.ACCEPTABLE.items()]))
    if cursor is not None:
        stmt = stmt.where(SuiteRunResult.id > cursor)
    rows = session.execute(stmt.order_by(SuiteRunResult.id).limit(limit + 1)).all()
    out = []
    for row, source, source_name, device, rel, rtol, atol, etype, emsg, took, graph_status, stage, structural, launches \
            in rows:
        origin = (describe(_Prov(source, source_name or "", device, row.verified)) if source else
                  "pending" if row.verdict is None else "no stored result")
        if row.reused_from_job_id:
            origin = f"reused from job {row.reused_from_job_id} ({origin})"
        error = f"{etype}: {emsg}" if etype and emsg else (emsg or etype)
        out.append({"id": row.id, "operator": row.operator, "case": row.case, "mode": row.mode,
                    "attempt": row.attempt, "status": row.status, "verdict": row.verdict, "source": row.source,
                    "provenance": origin, "verified": row.verified, "job_id": row.job_id,
                    "reused_from_job_id": row.reused_from_job_id, "case_result_id": row.case_result_id,
                    "max_abs_diff": row.max_abs_diff, "max_rel_diff": rel,
                    "graph_max_abs_diff": row.graph_max_abs_diff, "graph_status": graph_status, "stage": stage,
                    "rtol": rtol, "atol": atol,
                    "diagnosis_rules": row.diagnosis_rules, "error": error or row.note or None,
                    "flips": row.flips, "flaky": flaky.is_flaky(row.flips, min_flips), "note": row.note,
                    "duration_s": took, "structural": structural, "kernel_launches": launches})
    next_cursor = rows[limit - 1][0].id if len(rows) > limit else None
    return out[:limit], next_cursor


def latest_attempts(session: Session, run: SuiteRun) -> dict[tuple[str, str, str], int]:
    """(operator, case, mode) -> its latest attempt in the run: earlier attempts were replaced."""
    rows = session.execute(select(SuiteRunResult.operator, SuiteRunResult.case, SuiteRunResult.mode,
                                  func.max(SuiteRunResult.attempt))
                           .where(SuiteRunResult.suite_run_id == run.id)
                           .group_by(SuiteRunResult.operator, SuiteRunResult.case, SuiteRunResult.mode))
    return {(op, case, mode): attempt for op, case, mode, attempt in rows}


@dataclass
class _Prov:
    source: str
    source_name: str
    device: str | None
    verified: bool


def comparison(session: Session, run: SuiteRun, other_id: int | None) -> tuple[SuiteRun | None, suite_compare.Comparison]:
    """`run` against `other_id`, or against its previous run on the branch when None."""
    if other_id is not None:
        other: SuiteRun | None = get_run(session, other_id)
        assert other is not None
        if other.suite_id != run.suite_id:
            raise InvalidInput(f"suite run {other_id} belongs to suite {other.name!r}, not {run.name!r}")
    else:
        other = (session.get(SuiteRun, run.previous_run_id) if run.previous_run_id
                 else suite_finish.previous_run(session, run))
    before = suite_finish.outcomes(session, other.id) if other else {}
    result = suite_compare.compare(before, suite_finish.outcomes(session, run.id))
    if other is None:  # nothing to compare with: every case is new, nothing regressed
        result.new = []
    return other, result


def deliveries(session: Session, run_id: int) -> list[WebhookDelivery]:
    return list(session.scalars(select(WebhookDelivery).where(WebhookDelivery.suite_run_id == run_id)
                                .order_by(WebhookDelivery.id)))
