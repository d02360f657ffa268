"""The year view without reading the year: each operator's runs summarised per span of UTC days when
its results are stored, and long windows answered from those spans (docs/history.md §6).

Whole runs (each run's worst over its cases, as a history point) per day and per SPAN_DAYS days,
each case's own values per SPAN_DAYS days. A span row holds what history._bucket keeps of its runs (the
max and min of every value, runs, cases, first and last run), so spans merge into wider buckets
exactly as the runs would have."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text
from sqlalchemy.orm import Session

from runtime.modes import MODES
from server.models import CaseResult, HistorySpan, Job
from server.models.base import utcnow
from server.models.history_span import ALL_CASES
from server.services.history_window import VALUES, Window, _point

SPAN_DAYS = 8  # each case's spans; whole runs are kept per day and per SPAN_DAYS (the year view's buckets)
EPOCH = date(1970, 1, 1)
POINT_KEYS = ("job_id", "first_job_id", "mode", "created_at", "until", "commit", "branch", "atol", "rtol", "cases",
              "runs", *VALUES, *(f"{k}_min" for k in VALUES))


def epoch_day(at: datetime) -> int:
    """Days since 1970-01-01 of a UTC time (SQLite gives naive UTC, PostgreSQL aware)."""
    if at.tzinfo is not None:
        at = at.astimezone(UTC)
    return (at.date() - EPOCH).days


def day_start(day: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=day)


def aligned_since(now: datetime, days: int) -> datetime:
    """The start of the SPAN_DAYS span that holds `now - days`: a range from it reads whole spans only,
    no runs of a partial span (days to days + SPAN_DAYS - 1 days long; docs/history.md §7)."""
    return day_start(epoch_day(now - timedelta(days=days)) // SPAN_DAYS * SPAN_DAYS)


# -- write side ------------------------------------------------------------------------------------

def _rows(session: Session | Connection, operator_id: int, mode: str | None = None,
          since: datetime | None = None, until: datetime | None = None) -> list[Any]:
    """The operator's results with their run's date, in run order (the jobs index, then each job's rows)."""
    r = CaseResult
    stmt = (select(Job.id, Job.mode, Job.created_at, r.case, r.commit, r.branch, r.max_abs_diff, r.graph_max_abs_diff,
                   r.atol, r.rtol, r.aicore_time_us, r.utilization, r.graph_status)
            .join(r, r.job_id == Job.id).where(Job.operator_id == operator_id))
    if mode is not None:
        stmt = stmt.where(Job.mode == mode)
    if since is not None:
        stmt = stmt.where(Job.created_at >= since)
    if until is not None:
        stmt = stmt.where(Job.created_at < until)
    return list(session.execute(stmt))


def run_points(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """One point per run, as history._aggregate computes it in SQL: the max over the run's cases
    (utilisation: the mean), oldest first."""
    by_job: dict[int, list[Any]] = {}
    for row in rows:
        by_job.setdefault(row[0], []).append(row)
    out = []
    for job_id, rs in by_job.items():
        first = rs[0]
        utils = [x.utilization for x in rs if x.utilization is not None]
        out.append(_point(job_id, first, _max(x.commit for x in rs), _max(x.branch for x in rs),
                          _max(x.max_abs_diff for x in rs), _max(x.graph_max_abs_diff for x in rs),
                          _max(x.atol for x in rs), _max(x.rtol for x in rs), _max(x.aicore_time_us for x in rs),
                          sum(utils) / len(utils) if utils else None, len(rs)))
    out.sort(key=lambda p: (p["created_at"], p["job_id"]))
    return out


def case_points(rows: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """Each case's own point per run, as history.case_history builds them, oldest first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for x in rows:
        p = _point(x.id, x, x.commit, x.branch, x.max_abs_diff, x.graph_max_abs_diff, x.atol, x.rtol,
                   x.aicore_time_us, x.utilization, 1)
        p["graph_failed"] = x.graph_status == "fail"
        out.setdefault(x.case, []).append(p)
    for points in out.values():
        points.sort(key=lambda p: (p["created_at"], p["job_id"]))
    return out


def _max(values: Iterable[Any]) -> Any:
    return max((v for v in values if v is not None), default=None)


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two points or buckets as one bucket: history._bucket of their runs, in either order."""
    if (b["created_at"], b["first_job_id"]) < (a["created_at"], a["first_job_id"]):
        first = b
    else:
        first = a
    last = b if (b["until"], b["job_id"]) >= (a["until"], a["job_id"]) else a
    out = dict(last, first_job_id=first["first_job_id"], created_at=first["created_at"],
               runs=a["runs"] + b["runs"], cases=a["cases"] + b["cases"])
    if "graph_failed" in a or "graph_failed" in b:
        out["graph_failed"] = bool(a.get("graph_failed")) or bool(b.get("graph_failed"))
    for key in VALUES:
        out[key] = _pick(max, a[key], b[key])
        out[f"{key}_min"] = _pick(min, a[f"{key}_min"], b[f"{key}_min"])
    return out


def _pick(f: Any, x: Any, y: Any) -> Any:
    ok = [v for v in (x, y) if v is not None and v == v]  # v == v: not NaN
    return f(ok) if ok else None


def group(points: Iterable[dict[str, Any]], width: int, *key: str) -> list[dict[str, Any]]:
    """Merge points (runs or spans) into buckets of `width` UTC days (counted from 1970-01-01), per
    mode and the given keys; oldest first."""
    buckets: dict[tuple[Any, ...], dict[str, Any]] = {}
    for p in points:
        k = (p["mode"], epoch_day(p["created_at"]) // width, *(p[x] for x in key))
        buckets[k] = merge(buckets[k], p) if k in buckets else p
    return sorted(buckets.values(), key=lambda p: (p["created_at"], p["job_id"]))


def _span_rows(operator_id: int, rows: list[Any]) -> list[dict[str, Any]]:
    """history_spans rows for these results: whole runs per day and per SPAN_DAYS, each case per SPAN_DAYS."""
    out = []
    runs = run_points(rows)
    for days in (1, SPAN_DAYS):
        out += [_span_row(p, operator_id, ALL_CASES, days) for p in group(runs, days)]
    for case, points in case_points(rows).items():
        for p in group(points, SPAN_DAYS):
            out.append(_span_row(p, operator_id, case, SPAN_DAYS))
    return out


def _span_row(p: dict[str, Any], operator_id: int, case: str, days: int) -> dict[str, Any]:
    row = {k: p[k] for k in POINT_KEYS}
    row.update(operator_id=operator_id, case=case, days=days, span=epoch_day(p["created_at"]) // days,
               graph_failed=bool(p.get("graph_failed")))
    return row


def record(session: Session, jobs: Iterable[Job]) -> None:
    """Recompute the spans that hold these jobs' runs, from their results (a few days of one operator's
    runs each). Called where results are stored (results.store, ingest)."""
    todo = {(j.operator_id, j.mode, epoch_day(j.created_at) // SPAN_DAYS) for j in jobs}
    session.flush()
    for operator_id, mode, span in todo:
        start = day_start(span * SPAN_DAYS)
        session.execute(delete(HistorySpan).where(
            HistorySpan.operator_id == operator_id, HistorySpan.mode == mode,
            ((HistorySpan.days == 1) & HistorySpan.span.between(span * SPAN_DAYS, span * SPAN_DAYS + SPAN_DAYS - 1))
            | ((HistorySpan.days == SPAN_DAYS) & (HistorySpan.span == span))))
        rows = _span_rows(operator_id, _rows(session, operator_id, mode, start, start + timedelta(days=SPAN_DAYS)))
        if rows:
            session.execute(insert(HistorySpan), rows)


def rebuild(conn: Connection) -> int:
    """Every operator's spans from its results, in SQL (the migration that adds them, and bulk
    seeding: 10M results are minutes in the database, far more through Python); the same rows as
    record() writes (tests/server/test_history_spans.py compares them). Returns the rows written."""
    conn.execute(delete(HistorySpan))
    day = ("CAST(floor(extract(epoch FROM j.created_at) / 86400) AS INTEGER)" if conn.dialect.name == "postgresql"
           else "CAST(julianday(j.created_at) - 2440587.5 AS INTEGER)")
    cols = ("operator_id, \"case\", mode, days, span, runs, cases, first_job_id, job_id, created_at, until, "
            "\"commit\", branch, atol, rtol, " + ", ".join(f"{k}, {k}_min" for k in VALUES) + ", graph_failed")
    last = ", ".join(f"max(CASE WHEN back = 1 THEN {c} END)" for c in ('"commit"', "branch", "atol", "rtol"))
    values = ", ".join(f"max({k}), min({k})" for k in VALUES)
    order = "ORDER BY created_at{0}, job_id{0}"
    rank = (f"row_number() OVER (PARTITION BY {{keys}} {order.format('')}) AS fwd, "
            f"row_number() OVER (PARTITION BY {{keys}} {order.format(' DESC')}) AS back")
    summary = (f"count(*), {{cases}}, max(CASE WHEN fwd = 1 THEN job_id END), max(CASE WHEN back = 1 THEN job_id END), "
               f"min(created_at), max(created_at), {last}, {values}")
    runs = (f"SELECT j.operator_id, j.mode, j.id AS job_id, j.created_at, {day} AS day, max(r.\"commit\") AS \"commit\", "
            "max(r.branch) AS branch, max(r.atol) AS atol, max(r.rtol) AS rtol, max(r.max_abs_diff) AS max_abs_diff, "
            "max(r.graph_max_abs_diff) AS graph_max_abs_diff, max(r.aicore_time_us) AS aicore_time_us, "
            "avg(r.utilization) AS utilization, count(*) AS n FROM case_results r JOIN jobs j ON j.id = r.job_id "
            "GROUP BY j.id, j.operator_id, j.mode, j.created_at")
    keys = "operator_id, mode, span"
    for days in (1, SPAN_DAYS):
        conn.execute(text(
            f"INSERT INTO history_spans ({cols}) SELECT operator_id, '', mode, {days}, span, "
            f"{summary.format(cases='sum(n)')}, false FROM (SELECT r.*, {rank.format(keys=keys)} FROM "
            f"(SELECT runs.*, day / {days} AS span FROM ({runs}) runs) r) ranked GROUP BY {keys}"))
    points = (f"SELECT j.operator_id, r.\"case\", j.mode, j.id AS job_id, j.created_at, {day} / {SPAN_DAYS} AS span, "
              "r.\"commit\", r.branch, r.atol, r.rtol, " + ", ".join(f"r.{k}" for k in VALUES) +
              ", r.graph_status FROM case_results r JOIN jobs j ON j.id = r.job_id")
    keys = 'operator_id, "case", mode, span'
    conn.execute(text(
        f"INSERT INTO history_spans ({cols}) SELECT operator_id, \"case\", mode, {SPAN_DAYS}, span, "
        f"{summary.format(cases='count(*)')}, max(CASE WHEN graph_status = 'fail' THEN 1 ELSE 0 END) = 1 "
        f"FROM (SELECT p.*, {rank.format(keys=keys)} FROM ({points}) p) ranked GROUP BY {keys}"))
    return int(conn.scalar(select(func.count()).select_from(HistorySpan)) or 0)


# -- read side -------------------------------------------------------------------------------------

def width_days(w: Window, now: datetime) -> int | None:
    """The buckets' width in whole days for a window answered from spans, None when it is not one:
    a date range from `since` downsampled into buckets, with no cursor or run limit."""
    if w.since is None or not w.buckets or w.cursor is not None or w.limit is not None:
        return None
    days = epoch_day(w.until or now) - epoch_day(w.since) + 1
    return max(1, math.ceil(days / max(1, w.buckets - 1)))  # days aligned to 1970: one bucket more at most


def _parts(w: Window, days: int, now: datetime) -> tuple[int, int | None, list[tuple[datetime, datetime]]]:
    """Whole spans [lo, hi] to read from history_spans, and the partial ends to read from the runs."""
    since, until = _utc(w.since), _utc(w.until)
    first = epoch_day(since) // days
    lo = first if since == day_start(first * days) else first + 1
    raw = [] if lo == first else [(since, day_start(lo * days))]
    hi = None
    if until is not None:
        last = epoch_day(until) // days
        hi = last - 1
        if until > day_start(last * days):
            raw.append((max(since, day_start(last * days)), until))
        if hi < lo:  # the window lies within one or two spans: its runs are few
            raw = [(since, until)]
    raw = [(a, b) for a, b in raw if a < b]
    return lo, hi, raw


def _utc(at: Any) -> Any:
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


def _spans(session: Session, operator_id: int, w: Window, days: int, lo: int, hi: int | None,
           cases: bool) -> list[dict[str, Any]]:
    s = HistorySpan
    keys = (*POINT_KEYS, "graph_failed", "case") if cases else POINT_KEYS
    # Every mode named, so that the primary key (operator_id, case, mode, days, span) seeks each
    # mode's spans of the range instead of reading the operator's spans of every width and date.
    modes = [w.mode] if w.mode else list(MODES)
    stmt = select(*(getattr(s, k) for k in keys)).where(s.operator_id == operator_id, s.mode.in_(modes),
                                                        s.days == days, s.span >= lo)
    stmt = stmt.where(s.case != ALL_CASES) if cases else stmt.where(s.case == ALL_CASES)
    if w.case is not None:
        stmt = stmt.where(s.case == w.case)
    if hi is not None:
        stmt = stmt.where(s.span <= hi)
    return [dict(zip(keys, row)) for row in session.execute(stmt)]


def operator_points(session: Session, operator_id: int, w: Window,
                    run_by_run: Callable[[Window], list[dict[str, Any]]]) -> list[dict[str, Any]] | None:
    """The window's points from the spans (None: not a window they answer): a mode with more than
    w.buckets runs in buckets of whole days, a mode with fewer its runs one by one (read from the runs:
    at most w.buckets of them). With w.case, that case's own spans, when the buckets are whole
    multiples of them. `run_by_run` gives a window's points one per run (history.operator_history's,
    passed in: history calls us)."""
    now = utcnow()
    width = width_days(w, now)
    if width is None or (w.case is not None and width % SPAN_DAYS):
        return None
    days = SPAN_DAYS if w.case is not None or width % SPAN_DAYS == 0 else 1
    lo, hi, raw = _parts(w, days, now)
    points = _spans(session, operator_id, w, days, lo, hi, w.case is not None)
    for p in points:
        p.pop("case", None)
    for a, b in raw:
        rows = _rows(session, operator_id, w.mode, a, b)
        if w.case is not None:
            points += case_points(rows).get(w.case, [])
        else:
            points += run_points(rows)
    out = []
    for mode, ps in _by_mode(points).items():
        if sum(p["runs"] for p in ps) > (w.buckets or 0):
            out += group(ps, width)
        else:
            out += run_by_run(_runs_window(w, mode))
    return sorted(out, key=lambda p: (p["created_at"], p["job_id"]))


def _by_mode(points: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        out.setdefault(p["mode"], []).append(p)
    return out


def _runs_window(w: Window, mode: str) -> Window:
    """The same range, one mode, run by run (no buckets): for a mode with few runs."""
    return Window(mode=mode, since=w.since, until=w.until, case=w.case)


def case_points_by_case(session: Session, operator_id: int, w: Window,
                        run_by_run: Callable[[Window], dict[str, list[dict[str, Any]]]],
                        ) -> dict[str, list[dict[str, Any]]] | None:
    """Every case's own points from the spans (None: not a window they answer): in a mode with more
    than w.buckets runs (its most frequent case's), buckets of whole days; else run by run
    (`run_by_run`: history.case_history's, passed in)."""
    now = utcnow()
    width = width_days(w, now)
    if width is None or width % SPAN_DAYS:
        return None
    lo, hi, raw = _parts(w, SPAN_DAYS, now)
    points = _spans(session, operator_id, w, SPAN_DAYS, lo, hi, True)
    for a, b in raw:
        for case, ps in case_points(_rows(session, operator_id, w.mode, a, b)).items():
            if w.case is None or case == w.case:
                points += [dict(p, case=case) for p in ps]
    out: dict[str, list[dict[str, Any]]] = {}
    for mode, ps in _by_mode(points).items():
        runs: dict[str, int] = {}
        for p in ps:
            runs[p["case"]] = runs.get(p["case"], 0) + p["runs"]
        if max(runs.values()) > (w.buckets or 0):
            for p in group(ps, width, "case"):
                out.setdefault(p.pop("case"), []).append(p)
        else:
            for case, cps in run_by_run(_runs_window(w, mode)).items():
                out.setdefault(case, []).extend(cps)
    for cps in out.values():
        cps.sort(key=lambda p: (p["created_at"], p["job_id"]))
    return out
