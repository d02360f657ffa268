"""Precision drift: a case whose error, still within tolerance, grows run after run (docs/ci.md,
"Precision drift").

For every operator x case x mode of a finished suite run, the error magnitude (max |diff| and the
mismatch ratio; graph verify's in SIM, the NPU's own in NPU) is held against the same case's values over
the suite's last `drift_window` finished runs on the branch that used the same tolerance. A case drifts when
its verdict is acceptable and
- its max |diff| (or mismatch ratio) is at least `drift_growth` times the median of those runs (a median
  of exactly 0 says nothing about growth: from bit-identical results only the next rule applies), or
- it uses more than half of its tolerance after a median use under a tenth, where the use is
  max |diff| / (atol + rtol * max |golden|).
Drift never turns a run red by itself; `crosscheck ci run --fail-on drift` gates on it.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runtime import verdicts
from server.models import CaseResult, Suite, SuiteRun, SuiteRunResult
from server.models.suite_run import DONE, FINISHED

MIN_HISTORY = 3  # earlier runs with the same tolerance before a median means anything
HALF, TENTH = 0.5, 0.1
METRIC_WORDS = {"max_abs_diff": "max |diff|", "mismatch_ratio": "mismatched share"}  # never the column's name
LISTED = 50  # drifting cases kept on the run row; the count is of all


@dataclass
class Drift:
    operator: str
    case: str
    mode: str
    metric: str  # max_abs_diff | mismatch_ratio
    value: float
    median: float  # over `runs` earlier runs
    runs: int
    why: str  # one line for pages and the summary
    tolerance_used: float | None = None  # max |diff| as a share of the widest allowance


@dataclass
class _Point:
    acceptable: bool
    tolerance: tuple[float | None, float | None]
    max_abs_diff: float | None
    mismatch_ratio: float | None
    allowance: float | None


def _point(mode: str, verdict: str, row: CaseResult) -> _Point | None:
    if mode == "sim":
        m = ((row.report or {}).get("graph_verify") or {}).get("metrics") or {}
        if not m:
            return None  # no graph verify: nothing measured in SIM
        rtol, atol = m.get("rtol", row.rtol), m.get("atol", row.atol)
        diff, ratio, golden = m.get("max_abs_diff"), m.get("mismatch_ratio"), m.get("golden_abs_max")
    else:
        rtol, atol = row.rtol, row.atol
        diff, ratio, golden = row.max_abs_diff, row.mismatch_ratio, row.golden_abs_max
    allowance = None
    if isinstance(atol, (int, float)) and isinstance(rtol, (int, float)) and isinstance(golden, (int, float)):
        allowance = atol + rtol * abs(golden)
    return _Point(verdicts.acceptable(verdict, mode), (rtol, atol), _num(diff), _num(ratio),
                  allowance if allowance and allowance > 0 else None)


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and x == x and abs(x) != float("inf") else None


def find(session: Session, run: SuiteRun, suite: Suite) -> list[Drift]:
    """The drifting cases of `run`, against the suite's earlier finished runs on its branch."""
    branch = SuiteRun.branch.is_(None) if run.branch is None else SuiteRun.branch == run.branch
    earlier = list(session.scalars(select(SuiteRun.id).where(SuiteRun.suite_id == run.suite_id, branch,
                                                             SuiteRun.id < run.id, SuiteRun.status == FINISHED)
                                   .order_by(SuiteRun.id.desc()).limit(max(1, suite.drift_window))))
    if len(earlier) < MIN_HISTORY:
        return []
    points = _points(session, [run.id, *earlier])
    found: list[Drift] = []
    for key, now in sorted(points.get(run.id, {}).items()):
        if not now.acceptable:
            continue  # failing is a regression's business, not drift's
        past = [p for rid in earlier if (p := points.get(rid, {}).get(key)) is not None
                and p.acceptable and p.tolerance == now.tolerance]
        if len(past) >= MIN_HISTORY:
            found.extend(_judge(key, now, past, suite.drift_growth))
    return found


def _judge(key: tuple[str, str, str], now: _Point, past: list[_Point], growth: float) -> list[Drift]:
    op, case, mode = key
    out: list[Drift] = []
    for metric in ("max_abs_diff", "mismatch_ratio"):
        value = getattr(now, metric)
        history = [v for p in past if (v := getattr(p, metric)) is not None]
        if value is None or len(history) < MIN_HISTORY:
            continue
        median = statistics.median(history)
        used = value / now.allowance if metric == "max_abs_diff" and now.allowance else None
        if median > 0 and value >= growth * median:
            out.append(Drift(op, case, mode, metric, value, median, len(history),
                             f"{METRIC_WORDS[metric]} {value:.3g} is {value / median:.0f}x its median {median:.3g} over "
                             f"{len(history)} runs, still within tolerance", used))
            continue
        if used is not None and used > HALF:
            past_used = [p.max_abs_diff / p.allowance for p in past if p.max_abs_diff is not None and p.allowance]
            if len(past_used) >= MIN_HISTORY and statistics.median(past_used) < TENTH:
                out.append(Drift(op, case, mode, metric, value, median, len(history),
                                 f"uses {used:.0%} of its tolerance after a median {statistics.median(past_used):.0%}"
                                 f" over {len(past_used)} runs", used))
    return out


def _points(session: Session, run_ids: list[int]) -> dict[int, dict[tuple[str, str, str], _Point]]:
    """run -> (operator, case, mode) -> its latest attempt's point."""
    rows = session.execute(select(SuiteRunResult.suite_run_id, SuiteRunResult.operator, SuiteRunResult.case,
                                  SuiteRunResult.mode, SuiteRunResult.attempt, SuiteRunResult.verdict,
                                  SuiteRunResult.case_result_id)
                           .where(SuiteRunResult.suite_run_id.in_(run_ids), SuiteRunResult.status == DONE,
                                  SuiteRunResult.case_result_id.is_not(None))).all()
    latest: dict[tuple[int, str, str, str], Any] = {}
    for r in rows:
        k = (r.suite_run_id, r.operator, r.case, r.mode)
        if k not in latest or r.attempt >= latest[k].attempt:
            latest[k] = r
    ids = {r.case_result_id for r in latest.values()}
    by_id = {c.id: c for c in session.scalars(select(CaseResult).where(CaseResult.id.in_(ids)))} if ids else {}
    out: dict[int, dict[tuple[str, str, str], _Point]] = {}
    for (rid, op, case, mode), r in latest.items():
        row = by_id.get(r.case_result_id)
        point = _point(mode, r.verdict or "", row) if row is not None and r.verdict else None
        if point is not None:
            out.setdefault(rid, {})[(op, case, mode)] = point
    return out


def summary(drifts: list[Drift]) -> dict[str, Any]:
    """What the run row keeps: the count and the first LISTED, one entry per case (its first metric)."""
    seen: dict[tuple[str, str, str], Drift] = {}
    for d in drifts:
        seen.setdefault((d.operator, d.case, d.mode), d)
    return {"drift": len(seen), "drifting": [asdict(d) for d in list(seen.values())[:LISTED]]}


def drifting_of(session: Session, operator: str) -> list[tuple[SuiteRun, dict[str, Any]]]:
    """The operator's drifting cases in each suite's latest finished run: (that run, its drift entry)."""
    out = []
    for suite_id in session.scalars(select(Suite.id).order_by(Suite.name)):
        run = session.scalar(select(SuiteRun).where(SuiteRun.suite_id == suite_id, SuiteRun.status == FINISHED)
                             .order_by(SuiteRun.id.desc()).limit(1))
        for d in ((run.totals or {}).get("drifting") or []) if run else []:
            if d.get("operator") == operator and d.get("metric") == "max_abs_diff":
                out.append((run, d))
    return out


def trend(session: Session, run: SuiteRun, key: tuple[str, str, str], runs: int) -> list[dict[str, Any]]:
    """One case's max |diff| and its allowance (atol + rtol * max |golden|) over the suite's last `runs`
    finished runs on the run's branch, up to `run`, oldest first."""
    branch = SuiteRun.branch.is_(None) if run.branch is None else SuiteRun.branch == run.branch
    rows = session.execute(select(SuiteRun.id, SuiteRun.commit).where(
        SuiteRun.suite_id == run.suite_id, branch, SuiteRun.id <= run.id, SuiteRun.status == FINISHED)
        .order_by(SuiteRun.id.desc()).limit(runs)).all()
    points = _points(session, [r.id for r in rows])
    out = []
    for rid, commit in reversed(rows):
        p = points.get(rid, {}).get(key)
        if p is not None:
            out.append({"run_id": rid, "commit": commit, "value": p.max_abs_diff, "allowance": p.allowance})
    return out
