"""Retention: `crosscheck db compact` thins case results older than the window (docs/history.md).

Every result younger than `retention_days` is kept. Of the older ones, per operator, case and mode,
it keeps the latest result and the first result of every stretch of equal verdicts (so every flip,
regressions included, and with them the whole verdict sequence), and deletes the rest after adding
them to the daily aggregates (`case_days`). It works one operator at a time in batches of at most
`batch` results, each in its own short transaction, so that the service can keep running: new
results are younger than the cutoff and never touched, the latest result of a case is never deleted,
and a reader sees a run either before or after a batch.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from server.models import CaseDay, CaseResult, Operator
from server.models.base import utcnow

log = logging.getLogger(__name__)
BATCH = 2000
Key = tuple[str, str]  # (case, mode)


@dataclass
class Compaction:
    cutoff: datetime
    examined: int = 0  # results older than the cutoff
    deleted: int = 0
    kept_latest: int = 0
    kept_flips: int = 0  # first of a stretch of equal verdicts (the very first result included)
    days: set[tuple[int, str, date]] = field(default_factory=set)  # (operator, mode, day) aggregated

    def summary(self) -> str:
        return (f"results older than {self.cutoff:%Y-%m-%d %H:%M} UTC: {self.examined}; deleted {self.deleted}, "
                f"kept {self.kept_latest} latest per case and mode and {self.kept_flips} verdict changes; "
                f"{len(self.days)} daily aggregates updated")


def compact(factory: sessionmaker[Session], retention_days: int, now: datetime | None = None,
            batch: int = BATCH, dry_run: bool = False) -> Compaction:
    """Apply the retention to every operator; dry_run counts without writing."""
    if retention_days < 1:
        raise ValueError("retention_days must be at least 1")
    out = Compaction(cutoff=(now or utcnow()) - timedelta(days=retention_days))
    with factory() as session:
        operator_ids = list(session.scalars(select(Operator.id).order_by(Operator.id)))
    for operator_id in operator_ids:
        _compact_operator(factory, operator_id, out, max(1, batch), dry_run)
    log.info("db.compacted cutoff=%s examined=%d deleted=%d", out.cutoff.isoformat(), out.examined, out.deleted)
    return out


def _compact_operator(factory: sessionmaker[Session], operator_id: int, out: Compaction, batch: int,
                      dry_run: bool) -> None:
    r = CaseResult
    with factory() as session:  # the latest per case and mode only moves forward, so this stays kept
        latest = set(session.scalars(select(func.max(r.id)).where(r.operator_id == operator_id)
                                     .group_by(r.case, r.mode)))
    previous: dict[Key, str] = {}
    jobs_seen: set[tuple[str, date, int]] = set()
    after = 0
    while True:
        with factory() as session, session.begin():
            rows = session.execute(
                select(r.id, r.job_id, r.case, r.mode, r.verdict, r.created_at, r.max_abs_diff,
                       r.graph_max_abs_diff, r.aicore_time_us)
                .where(r.operator_id == operator_id, r.id > after, r.created_at < out.cutoff)
                .order_by(r.id).limit(batch)).all()
            if not rows:
                return
            after = rows[-1].id
            doomed = []
            for row in rows:
                key = (row.case, row.mode)
                changed = previous.get(key) != row.verdict
                previous[key] = row.verdict
                if row.id in latest:
                    out.kept_latest += 1
                elif changed:
                    out.kept_flips += 1
                else:
                    doomed.append(row.id)
            out.examined += len(rows)
            out.deleted += len(doomed)
            if not dry_run:
                _add_to_days(session, operator_id, rows, jobs_seen, out)
                if doomed:
                    session.execute(delete(r).where(r.id.in_(doomed)))


def _add_to_days(session: Session, operator_id: int, rows: list[Any], jobs_seen: set[tuple[str, date, int]],
                 out: Compaction) -> None:
    """Fold results not yet counted (id above the day's last_result_id) into their day's aggregate."""
    by_day: dict[tuple[str, date], list[Any]] = {}
    for row in rows:
        by_day.setdefault((row.mode, _utc_day(row.created_at)), []).append(row)
    existing = {(d.mode, d.day): d for d in session.scalars(
        select(CaseDay).where(CaseDay.operator_id == operator_id, CaseDay.day.in_(sorted({day for _, day in by_day}))))}
    for (mode, day), day_rows in by_day.items():
        agg = existing.get((mode, day))
        if agg is None:
            agg = CaseDay(operator_id=operator_id, mode=mode, day=day, runs=0, results=0, verdict_counts={},
                          last_result_id=0)
            session.add(agg)
        new = [row for row in day_rows if row.id > agg.last_result_id]
        if not new:
            continue
        counts = dict(agg.verdict_counts)
        for row in new:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
            if (mode, day, row.job_id) not in jobs_seen:
                jobs_seen.add((mode, day, row.job_id))
                agg.runs += 1
        agg.verdict_counts = counts
        agg.results += len(new)
        agg.max_abs_diff_min = _fold(min, agg.max_abs_diff_min, [row.max_abs_diff for row in new])
        agg.max_abs_diff_max = _fold(max, agg.max_abs_diff_max, [row.max_abs_diff for row in new])
        agg.graph_max_abs_diff_max = _fold(max, agg.graph_max_abs_diff_max, [row.graph_max_abs_diff for row in new])
        agg.aicore_time_us_min = _fold(min, agg.aicore_time_us_min, [row.aicore_time_us for row in new])
        agg.aicore_time_us_max = _fold(max, agg.aicore_time_us_max, [row.aicore_time_us for row in new])
        agg.last_result_id = max(row.id for row in new)
        out.days.add((operator_id, mode, day))
    session.flush()


def _fold(pick: Any, current: float | None, values: list[float | None]) -> float | None:
    """min or max over the measured values (None and NaN are not measurements)."""
    measured = [v for v in [current, *values] if v is not None and not math.isnan(v)]
    return pick(measured) if measured else None


def _utc_day(at: datetime) -> date:
    """SQLite hands back naive UTC; PostgreSQL aware times in the session's time zone."""
    return (at.astimezone(UTC) if at.tzinfo else at).date()
