"""An operator's history: its runs by date, windowed (last N, a date range, a cursor back) and,
over long ranges, downsampled to min/max per time bucket so that spikes survive (docs/history.md).
The same window gives one case's runs (Window.case) or every case's runs at once (case_history)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import func, select, tuple_
from sqlalchemy.orm import Session

from runtime.modes import MODES
from server.errors import InvalidInput, NotFound
from server.models import CaseDay, CaseResult, CaseState, Job
from server.services import history_spans
from server.services.history_window import (  # noqa: F401 (re-exported: the API and pages read history.Window etc.)
    DEFAULT_RUNS, MAX_BUCKETS, MAX_RUNS, VALUES, Window, _point)

@dataclass
class History:
    points: list[dict[str, Any]]
    next_cursor: int | None  # pass as `cursor` for the page of older runs
    days: list[CaseDay]  # daily aggregates kept by compaction, within a date range


def operator_history(session: Session, operator_id: int, w: Window) -> History:
    """Runs oldest first (one point per job and mode), or min/max buckets when w.buckets is exceeded.

    With w.case: that case's values in the runs that stored it (NotFound for a case the operator
    never had); the daily aggregates are per operator, so none come with it."""
    if w.case is not None:
        _check_case(session, operator_id, w.case)
    _validate(w)
    days = _days(session, operator_id, w) if (w.since or w.until) and w.case is None else []
    spans = history_spans.operator_points(session, operator_id, w,
                                          lambda win: operator_history(session, operator_id, win).points)
    if spans is not None:  # a long window: from the spans kept at write time (docs/history.md §6)
        return History(spans, None, days)
    runs, more = _window_runs(session, operator_id, w)
    points = _aggregate(session, [r.id for r in runs], {r.id: r for r in runs}, w.case)
    points.sort(key=lambda p: (p["created_at"], p["job_id"]))
    if w.buckets:
        points = downsample(points, w.buckets)
    return History(points, runs[-1].id if more and runs else None, days)


class Run(NamedTuple):
    id: int
    mode: str
    created_at: datetime


def runs_of(points: list[dict[str, Any]]) -> list[Run]:
    """The runs behind run-by-run points (no buckets, no case), newest first: what the window's
    walk of the jobs found, handed on so that a page walks them once (docs/history.md §7)."""
    return [Run(p["job_id"], p["mode"], p["created_at"]) for p in reversed(points)]


def case_history(session: Session, operator_id: int, w: Window,
                 runs: list[Run] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Each case's own points over the window's runs, in one query: case -> points oldest first.

    A point has the shape of operator_history's (its `cases` is 1), plus `graph_failed`: that case's
    graph verify failed in the run. With w.buckets each case is downsampled on its own. `runs`: the
    window's runs when the caller has them already (runs_of)."""
    _validate(w)
    if runs is None:
        spans = history_spans.case_points_by_case(session, operator_id, w,
                                                  lambda win: case_history(session, operator_id, win))
        if spans is not None:  # a long window: from the spans kept at write time (docs/history.md §6)
            return spans
        runs, _more = _window_runs(session, operator_id, w)
    by_id = {r.id: r for r in runs}
    r = CaseResult
    stmt = (select(r.job_id, r.case, r.commit, r.branch, r.max_abs_diff, r.graph_max_abs_diff, r.atol, r.rtol,
                   r.aicore_time_us, r.utilization, r.graph_status)
            .where(r.job_id.in_(list(by_id))))
    if w.case is not None:
        stmt = stmt.where(r.case == w.case)
    out: dict[str, list[dict[str, Any]]] = {}
    for job_id, case, commit, branch, diff, gdiff, atol, rtol, us, util, graph in session.execute(stmt):
        p = _point(job_id, by_id[job_id], commit, branch, diff, gdiff, atol, rtol, us, util, 1)
        p["graph_failed"] = graph == "fail"
        out.setdefault(case, []).append(p)
    for case, points in out.items():
        points.sort(key=lambda p: (p["created_at"], p["job_id"]))
        if w.buckets:
            out[case] = downsample(points, w.buckets)
    return out


def _window_runs(session: Session, operator_id: int, w: Window) -> tuple[list[Any], bool]:
    """The window's runs, newest first, and whether older ones exist."""
    _validate(w)
    n = w.runs_wanted()
    runs = _runs(session, operator_id, w, n + 1)
    return runs[:n], len(runs) > n


def _validate(w: Window) -> None:
    """InvalidInput naming what is wrong with the window."""
    if w.mode is not None and w.mode not in MODES:
        raise InvalidInput(f"unknown mode {w.mode!r}; use sim or npu")
    if w.buckets is not None and not 2 <= w.buckets <= MAX_BUCKETS:
        raise InvalidInput(f"buckets must be between 2 and {MAX_BUCKETS}")
    if w.since and w.until and w.since >= w.until:
        raise InvalidInput("since must be before until")


def _check_case(session: Session, operator_id: int, case: str) -> None:
    """NotFound naming the case unless the operator has it: its case state (one key lookup), else any result."""
    if session.get(CaseState, (operator_id, case)) is not None:
        return
    if session.scalar(select(CaseResult.id).where(CaseResult.operator_id == operator_id, CaseResult.case == case)
                      .limit(1)) is None:
        raise NotFound(f"no case {case!r} in this operator")


def newest_runs(session: Session, operator_id: int, limit: int) -> list[Run]:
    """The operator's last runs, newest first: (id, mode, created_at) rows."""
    return _runs(session, operator_id, Window(), limit)


def _runs(session: Session, operator_id: int, w: Window, limit: int) -> list[Any]:
    """Up to `limit` jobs with at least one result, newest first.

    Jobs come newest first from ix_jobs_operator_created_id_mode in chunks, and a chunk's jobs with results
    are found with one probe of ix_case_results_job_values. A single query with EXISTS would say the
    same, but PostgreSQL misjudges how many jobs pass it and then reads and sorts all of the
    operator's jobs (1,000 here) instead of the newest hundred (docs/history.md §1)."""
    stmt = _runs_query(session, operator_id, w)
    out: list[Any] = []
    chunk = limit + 8  # most jobs have results: one chunk is the usual case
    last: Any = None
    while len(out) < limit:
        page = stmt if last is None else stmt.where(tuple_(Job.created_at, Job.id) < tuple_(last.created_at, last.id))
        jobs = list(session.execute(page.limit(chunk)))
        if not jobs:
            break
        probe = select(CaseResult.job_id).distinct().where(CaseResult.job_id.in_([j.id for j in jobs]))
        if w.case is not None:
            probe = probe.where(CaseResult.case == w.case)
        with_results = set(session.scalars(probe))
        out += [j for j in jobs if j.id in with_results]
        if len(jobs) < chunk:
            break
        last, chunk = jobs[-1], chunk * 2
    return out[:limit]


def _runs_query(session: Session, operator_id: int, w: Window) -> Any:
    """The operator's jobs in the window, newest first (ix_jobs_operator_created_id_mode, index-only)."""
    stmt = select(Job.id, Job.mode, Job.created_at).where(Job.operator_id == operator_id)
    if w.mode:
        stmt = stmt.where(Job.mode == w.mode)
    if w.since:
        stmt = stmt.where(Job.created_at >= w.since)
    if w.until:
        stmt = stmt.where(Job.created_at < w.until)
    if w.cursor is not None:
        at = session.execute(select(Job.created_at, Job.id).where(Job.id == w.cursor,
                                                                   Job.operator_id == operator_id)).first()
        if at is None:
            raise InvalidInput(f"cursor {w.cursor} is not a run of this operator")
        stmt = stmt.where(tuple_(Job.created_at, Job.id) < tuple_(at.created_at, at.id))
    return stmt.order_by(Job.created_at.desc(), Job.id.desc())


def _aggregate(session: Session, job_ids: list[int], runs: dict[int, Any],
               case: str | None = None) -> list[dict[str, Any]]:
    if not job_ids:
        return []
    r = CaseResult
    # Served by ix_case_results_job_values alone (no table reads); one case also reads its rows.
    stmt = (select(r.job_id, func.max(r.commit), func.max(r.branch), func.max(r.max_abs_diff),
                   func.max(r.graph_max_abs_diff), func.max(r.atol), func.max(r.rtol), func.max(r.aicore_time_us),
                   func.avg(r.utilization), func.count())
            .where(r.job_id.in_(job_ids)).group_by(r.job_id))
    if case is not None:
        stmt = stmt.where(r.case == case)
    return [_point(job_id, runs[job_id], *values) for job_id, *values in session.execute(stmt)]


def downsample(points: list[dict[str, Any]], buckets: int) -> list[dict[str, Any]]:
    """Per mode with more than `buckets` runs: equal time spans, each with the min and max of every value.

    A bucket's point carries the max as the value (the worst run) and the min beside it, its first and
    last job and dates, and the number of runs in it; the latest run's tolerance and labels."""
    out: list[dict[str, Any]] = []
    for mode in MODES:
        runs = [p for p in points if p["mode"] == mode]
        if len(runs) <= buckets:
            out.extend(runs)
            continue
        t0 = runs[0]["created_at"].timestamp()
        per_s = buckets / max(runs[-1]["created_at"].timestamp() - t0, 1e-6)
        groups: dict[int, list[dict[str, Any]]] = {}
        for p in runs:  # oldest first, so each group stays in time order
            groups.setdefault(min(int((p["created_at"].timestamp() - t0) * per_s), buckets - 1), []).append(p)
        out.extend(_bucket(g) for g in groups.values())
    out.sort(key=lambda p: (p["created_at"], p["job_id"]))
    return out


def _bucket(group: list[dict[str, Any]]) -> dict[str, Any]:
    first, last = group[0], group[-1]
    b = dict(last, first_job_id=first["first_job_id"], created_at=first["created_at"], until=last["until"],
             runs=sum(p["runs"] for p in group), cases=sum(p["cases"] for p in group))
    if "graph_failed" in last:  # case_history: failed in any of the bucket's runs
        b["graph_failed"] = any(p["graph_failed"] for p in group)
    for key in VALUES:
        low_key = f"{key}_min"
        high = low = None
        for p in group:
            v, m = p[key], p[low_key]
            if v is not None and v == v and (high is None or v > high):  # v == v: not NaN
                high = v
            if m is not None and m == m and (low is None or m < low):
                low = m
        b[key], b[low_key] = high, low
    return b


def _days(session: Session, operator_id: int, w: Window) -> list[CaseDay]:
    stmt = select(CaseDay).where(CaseDay.operator_id == operator_id)
    if w.mode:
        stmt = stmt.where(CaseDay.mode == w.mode)
    if w.since:
        stmt = stmt.where(CaseDay.day >= w.since.date())
    if w.until:
        stmt = stmt.where(CaseDay.day <= w.until.date())
    return list(session.scalars(stmt.order_by(CaseDay.day, CaseDay.mode)))
