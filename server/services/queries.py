"""Read-side queries shared by the API and the dashboard."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Select, case, func, select
from sqlalchemy.orm import Session, defer

from server.errors import InvalidInput, NotFound
from server.models import CaseResult, CaseState, Job, Operator, Worker
from server.models.job import AWAITING_NPU, QUEUED, RUNNING
from runtime import vocabulary
from server.services import combined
from server.services.combined import COMBINED, SEVERITY

MAX_PAGE = 500


@dataclass
class OperatorFilter:
    verdict: list[str] = field(default_factory=list)  # combined verdicts
    outcome: list[str] = field(default_factory=list)  # runtime.vocabulary.OUTCOMES
    q: str = ""  # substring of the name
    mode: str | None = None  # only operators with a result in this mode
    branch: str | None = None
    author: str | None = None
    since: datetime | None = None


def _operator_query(f: OperatorFilter) -> Select[Any]:
    stmt = select(Operator).where(Operator.combined_verdict.is_not(None))
    if f.verdict:
        bad = [v for v in f.verdict if v not in COMBINED]
        if bad:
            raise InvalidInput(f"unknown verdict(s) {', '.join(bad)}; use {', '.join(COMBINED)}")
        stmt = stmt.where(Operator.combined_verdict.in_(f.verdict))
    if f.outcome:
        bad = [o for o in f.outcome if o not in vocabulary.OUTCOMES]
        if bad:
            raise InvalidInput(f"unknown outcome(s) {', '.join(bad)}; use {', '.join(vocabulary.OUTCOMES)}")
        stmt = stmt.where(Operator.outcome.in_(f.outcome))
    if f.q:
        stmt = stmt.where(Operator.name.ilike(f"%{f.q}%"))
    if f.mode == "sim":
        stmt = stmt.where(Operator.latest_sim_job_id.is_not(None))
    elif f.mode == "npu":
        stmt = stmt.where(Operator.latest_npu_job_id.is_not(None))
    elif f.mode:
        raise InvalidInput(f"unknown mode {f.mode!r}; use sim or npu")
    if f.branch:
        stmt = stmt.where(Operator.labels["branch"].as_string() == f.branch)
    if f.author:
        stmt = stmt.where(Operator.labels["author"].as_string() == f.author)
    if f.since:
        stmt = stmt.where(Operator.updated_at >= f.since)
    return stmt


def list_operators(session: Session, f: OperatorFilter, limit: int = 50, offset: int = 0) -> tuple[list[Operator], int]:
    """Operators, real defects first (by verdict severity), then by name."""
    limit = max(1, min(limit, MAX_PAGE))
    stmt = _operator_query(f)
    total = session.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    severity = _severity_case()
    worst = case(*[(Operator.outcome == o, i) for i, o in enumerate(vocabulary.OUTCOMES)], else_=len(vocabulary.OUTCOMES))
    rows = list(session.scalars(stmt.order_by(worst, severity, Operator.name).limit(limit).offset(max(0, offset))))
    return rows, int(total)


def _severity_case() -> Any:
    return case(*[(Operator.combined_verdict == v, i) for v, i in SEVERITY.items()], else_=len(SEVERITY))


def outcome_counts(session: Session) -> dict[str, int]:
    """Operators by outcome (runtime.vocabulary), the overview's chips."""
    rows = session.execute(select(Operator.outcome, func.count()).where(Operator.outcome.is_not(None))
                           .group_by(Operator.outcome))
    return {o: int(n) for o, n in rows}


def verdict_counts(session: Session) -> dict[str, int]:
    rows = session.execute(select(Operator.combined_verdict, func.count()).where(Operator.combined_verdict.is_not(None))
                           .group_by(Operator.combined_verdict))
    return {v: int(n) for v, n in rows}


def get_operator(session: Session, name: str) -> Operator:
    operator = session.scalar(select(Operator).where(Operator.name == name))
    if operator is None:
        raise NotFound(f"no operator {name!r}")
    return operator


def state_results(session: Session, states: Sequence[Any], *columns: Any, lean: bool = False) -> dict[int, Any]:
    """The latest SIM and NPU results that case states point at, by id, in one query.

    The one home of the states -> results join. `columns` loads plain rows of just those columns
    (CaseResult.id first); `lean` loads results without their reports (touching one raises).
    """
    ids = [i for s in states for i in (s.sim_result_id, s.npu_result_id) if i]
    if not ids:
        return {}
    if columns:
        return {r.id: r for r in session.execute(select(*columns).where(CaseResult.id.in_(ids)))}
    stmt = select(CaseResult).where(CaseResult.id.in_(ids))
    if lean:
        stmt = stmt.options(defer(CaseResult.report, raiseload=True))
    return {r.id: r for r in session.scalars(stmt)}


def _case_row(state: Any, results: dict[int, Any]) -> dict[str, Any]:
    sim, npu = results.get(state.sim_result_id or 0), results.get(state.npu_result_id or 0)
    return {"case": state.case, "combined_verdict": state.combined_verdict, "reason": state.reason,
            "sim": sim, "npu": npu, "outcome": combined.outcome(sim, npu)}


def operator_cases(session: Session, operator_id: int) -> list[dict[str, Any]]:
    """Each case's combined verdict with its latest SIM and NPU results."""
    states = list(session.scalars(select(CaseState).where(CaseState.operator_id == operator_id)
                                  .order_by(CaseState.case)))
    results = state_results(session, states)
    return [_case_row(s, results) for s in states]


@dataclass
class CaseFilter:
    verdict: list[str] = field(default_factory=list)
    mode: str | None = None
    operator: str | None = None
    branch: str | None = None
    author: str | None = None
    commit: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    job_id: int | None = None


def list_cases(session: Session, f: CaseFilter, cursor: int | None = None, limit: int = 100) -> tuple[list[CaseResult], int | None]:
    """Case results newest first; keyset pagination on id (the cursor is the last id seen)."""
    limit = max(1, min(limit, MAX_PAGE))
    stmt = select(CaseResult)
    if f.verdict:
        stmt = stmt.where(CaseResult.verdict.in_(f.verdict))
    if f.mode:
        stmt = stmt.where(CaseResult.mode == f.mode)
    if f.operator:
        operator = session.scalar(select(Operator.id).where(Operator.name == f.operator))
        stmt = stmt.where(CaseResult.operator_id == (operator if operator is not None else -1))
    if f.branch:
        stmt = stmt.where(CaseResult.branch == f.branch)
    if f.author:
        stmt = stmt.where(CaseResult.author == f.author)
    if f.commit:
        stmt = stmt.where(CaseResult.commit == f.commit)
    if f.since:
        stmt = stmt.where(CaseResult.created_at >= f.since)
    if f.until:
        stmt = stmt.where(CaseResult.created_at < f.until)
    if f.job_id is not None:
        stmt = stmt.where(CaseResult.job_id == f.job_id)
    if cursor is not None:
        stmt = stmt.where(CaseResult.id < cursor)
    rows = list(session.scalars(stmt.order_by(CaseResult.id.desc()).limit(limit + 1)))
    next_cursor = rows[limit - 1].id if len(rows) > limit else None
    return rows[:limit], next_cursor


def graph_failed_jobs(session: Session, job_ids: list[int], case: str | None = None) -> set[int]:
    """Which of these jobs have a case (or this case) whose graph verify failed (the history chart marks them)."""
    if not job_ids:
        return set()
    stmt = select(CaseResult.job_id).where(CaseResult.job_id.in_(job_ids), CaseResult.graph_status == "fail")
    if case is not None:
        stmt = stmt.where(CaseResult.case == case)
    return set(session.scalars(stmt.distinct()))


def job_cases(session: Session, job_id: int) -> list[CaseResult]:
    return list(session.scalars(select(CaseResult).where(CaseResult.job_id == job_id).order_by(CaseResult.id)))


def jobs_by_state(session: Session) -> dict[tuple[str, str], int]:
    rows = session.execute(select(Job.queue, Job.status, func.count()).group_by(Job.queue, Job.status))
    return {(q, s): int(n) for q, s, n in rows}


def count_jobs(session: Session, statuses: Sequence[str]) -> int:
    """Jobs in these states, counted from the status index: what is running, not the whole history."""
    return int(session.scalar(select(func.count()).select_from(Job).where(Job.status.in_(statuses))) or 0)


def recent_jobs(session: Session, limit: int = 50, operator_id: int | None = None) -> list[Job]:
    return [job for job, _ in job_page(session, limit, operator_id)]


def job_page(session: Session, limit: int = 50, operator_id: int | None = None,
             before: int | None = None) -> list[tuple[Job, str]]:
    """The newest jobs with their operators' names, in one query: keyset pages (`before`: the last id of the
    previous page) walk the primary key, or `ix_jobs_operator_id_id` for one operator, backwards (docs/platform.md §5)."""
    stmt = (select(Job, Operator.name).join(Operator, Operator.id == Job.operator_id)
            .order_by(Job.id.desc()).limit(limit))
    if operator_id is not None:
        stmt = stmt.where(Job.operator_id == operator_id)
    if before is not None:
        stmt = stmt.where(Job.id < before)
    return [(job, name) for job, name in session.execute(stmt)]


def list_workers(session: Session) -> list[Worker]:
    return list(session.scalars(select(Worker).order_by(Worker.last_heartbeat.desc())))


def case_summaries(session: Session, operator_ids: list[int], *columns: Any) -> dict[int, list[dict[str, Any]]]:
    """Each operator's cases with their latest results, without the full runtime reports (the overview's rows):
    reports carry log tails and can be tens of KB each, so loading them for a page of
    operators would dominate its time. Touching `report` raises instead of querying.

    `columns` (CaseResult.id first): plain rows of just those columns instead of ORM objects, and
    plain case states; what a page of 200 operators needs to stay within its time (bench/depth.py)."""
    if not operator_ids:
        return {}
    where = CaseState.operator_id.in_(operator_ids)
    order = (CaseState.operator_id, CaseState.case)
    if columns:
        c = CaseState
        states: list[Any] = list(session.execute(select(c.operator_id, c.case, c.sim_result_id, c.npu_result_id,
                                                        c.combined_verdict, c.reason).where(where).order_by(*order)))
    else:
        states = list(session.scalars(select(CaseState).where(where).order_by(*order)))
    results = state_results(session, states, *columns, lean=True)
    out: dict[int, list[dict[str, Any]]] = {i: [] for i in operator_ids}
    for s in states:
        out[s.operator_id].append(_case_row(s, results))
    return out


def label_values(session: Session, limit: int = 200) -> dict[str, list[str]]:
    """Branches and authors of the operators' latest submissions: what the overview's label
    filters match on (Operator.labels), one row per operator rather than per submission."""
    out: dict[str, list[str]] = {}
    for key in ("branch", "author"):
        value = Operator.labels[key].as_string()
        out[key] = [v for v in session.scalars(select(value).where(value.is_not(None)).distinct()
                                                .order_by(value).limit(limit)) if v]
    return out


def job_siblings(session: Session, submission_id: int) -> list[Job]:
    """The jobs of one submission (one per mode)."""
    return list(session.scalars(select(Job).where(Job.submission_id == submission_id).order_by(Job.id)))


def queue_depths(session: Session) -> dict[str, dict[str, int]]:
    """{queue: {queued: n, awaiting_npu: n, running: n}} for the workers page."""
    out: dict[str, dict[str, int]] = {}
    for (queue, status), n in jobs_by_state(session).items():
        if status in (QUEUED, AWAITING_NPU, RUNNING):
            out.setdefault(queue, {QUEUED: 0, AWAITING_NPU: 0, RUNNING: 0})[status] = n
    return out
