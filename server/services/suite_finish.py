"""Finishing a suite run: totals, the comparison with the previous run on the branch, flip counts,
and a webhook when something regressed."""
from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from runtime import verdicts, vocabulary
from server.models import CaseResult, Suite, SuiteRun, SuiteRunResult
from server.models.base import utcnow
from server.models.suite_run import DONE, FINISHED, FROM_WORKER, REUSED
from server.services import drift, flaky, perf, suite_compare, webhooks
from server.services.suite_compare import Key

log = logging.getLogger(__name__)
STORED_CHANGES = 50  # changes kept on the run row for lists; the compare endpoint has them all


def outcomes(session: Session, run_id: int) -> dict[Key, suite_compare.CaseOutcome]:
    rows = session.execute(select(SuiteRunResult.operator, SuiteRunResult.case, SuiteRunResult.mode,
                                  SuiteRunResult.attempt, SuiteRunResult.verdict, SuiteRunResult.max_abs_diff,
                                  SuiteRunResult.graph_max_abs_diff, SuiteRunResult.diagnosis_rules,
                                  SuiteRunResult.verified, CaseResult.stage)
                           .outerjoin(CaseResult, CaseResult.id == SuiteRunResult.case_result_id)
                           .where(SuiteRunResult.suite_run_id == run_id))
    return suite_compare.latest(rows)


def previous_run(session: Session, run: SuiteRun) -> SuiteRun | None:
    """The suite's latest finished run on the same branch before this one, opened by the same tenant:
    another tenant's run is never this one's regression baseline (runs opened before suites had owners
    may share a suite)."""
    branch = SuiteRun.branch.is_(None) if run.branch is None else SuiteRun.branch == run.branch
    return session.scalar(select(SuiteRun).where(SuiteRun.suite_id == run.suite_id, branch, SuiteRun.id < run.id,
                                                 SuiteRun.status == FINISHED, SuiteRun.created_by == run.created_by)
                          .order_by(SuiteRun.id.desc()).limit(1))


def totals(session: Session, run: SuiteRun) -> dict[str, Any]:
    """What the run page's headline numbers say, over each case's latest attempt. A result nobody verified
    (an upload without a device) is also counted apart, so a page never passes it off as checked."""
    rows = session.execute(select(SuiteRunResult.operator, SuiteRunResult.case, SuiteRunResult.mode,
                                  SuiteRunResult.attempt, SuiteRunResult.status, SuiteRunResult.verdict,
                                  SuiteRunResult.source, SuiteRunResult.verified, SuiteRunResult.flips, CaseResult.stage)
                           .outerjoin(CaseResult, CaseResult.id == SuiteRunResult.case_result_id)
                           .where(SuiteRunResult.suite_run_id == run.id)).all()
    latest: dict[Key, Any] = {}
    for r in rows:
        key = (r.operator, r.case, r.mode)
        if key not in latest or r.attempt >= latest[key].attempt:
            latest[key] = r
    by_mode: dict[str, dict[str, int]] = {}
    unverified_by_mode: dict[str, dict[str, int]] = {}
    # `failing` counts kernel defects only (runtime.vocabulary: the outcome `failed`); `outcomes` all four.
    outcomes: dict[str, int] = dict.fromkeys(vocabulary.OUTCOMES, 0)
    out: dict[str, Any] = {"cases": len(latest), "pending": 0, "acceptable": 0, "acceptable_unverified": 0,
                           "failing": 0, "reused": 0, "uploaded": 0, "unverified": 0, "flaky": 0,
                           "operators": len({k[0] for k in latest}), "outcomes": outcomes}
    suite = session.get(Suite, run.suite_id)
    min_flips = suite.flaky_min_flips if suite else 2
    for (_op, _case, mode), r in latest.items():
        if r.status != DONE or r.verdict is None:
            out["pending"] += 1
            continue
        counts = by_mode.setdefault(mode, {})
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
        ok = verdicts.acceptable(r.verdict, mode)
        kind = vocabulary.outcome(r.verdict, mode, r.stage or "") or vocabulary.FAILED
        outcomes[kind] += 1
        out["acceptable"] += ok
        out["failing"] += kind == vocabulary.FAILED
        out["reused"] += r.source == REUSED
        out["uploaded"] += r.source not in (REUSED, FROM_WORKER)
        if not r.verified:
            out["unverified"] += 1
            out["acceptable_unverified"] += ok
            counts = unverified_by_mode.setdefault(mode, {})
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        out["flaky"] += flaky.is_flaky(r.flips, min_flips)
    out["by_mode"], out["unverified_by_mode"] = by_mode, unverified_by_mode
    return out


def update_flips(session: Session, run: SuiteRun, suite: Suite) -> None:
    """Flips of each case over the suite's last flaky_window runs on this branch (this one included)."""
    branch = SuiteRun.branch.is_(None) if run.branch is None else SuiteRun.branch == run.branch
    ids = list(session.scalars(select(SuiteRun.id).where(SuiteRun.suite_id == run.suite_id, branch,
                                                          SuiteRun.id <= run.id, SuiteRun.status == FINISHED)
                               .order_by(SuiteRun.id.desc()).limit(max(2, suite.flaky_window))))
    ids.reverse()
    history: dict[int, dict[flaky.Key, tuple[int, flaky.Observation]]] = {i: {} for i in ids}
    rows = session.execute(select(SuiteRunResult.suite_run_id, SuiteRunResult.operator, SuiteRunResult.case,
                                  SuiteRunResult.mode, SuiteRunResult.attempt, SuiteRunResult.verdict,
                                  SuiteRunResult.content_sha256)
                           .where(SuiteRunResult.suite_run_id.in_(ids), SuiteRunResult.status == DONE))
    for run_id, op, case, mode, attempt, verdict, content in rows:
        seen = history[run_id].get((op, case, mode))
        if seen is None or attempt >= seen[0]:
            history[run_id][(op, case, mode)] = (attempt, (verdict, content))
    counts = flaky.flip_counts([{k: obs for k, (_, obs) in history[i].items()} for i in ids])
    mine = session.execute(select(SuiteRunResult.id, SuiteRunResult.operator, SuiteRunResult.case,
                                  SuiteRunResult.mode, SuiteRunResult.flips)
                           .where(SuiteRunResult.suite_run_id == run.id)).all()
    changes = [{"id": i, "flips": counts.get((op, case, mode), 0)} for i, op, case, mode, old in mine
               if counts.get((op, case, mode), 0) != old]
    if changes:
        session.execute(update(SuiteRunResult), changes)


def finish(session: Session, run: SuiteRun) -> None:
    """(Re)compute what a finished run shows, and notify on regressions."""
    suite = session.get(Suite, run.suite_id)
    assert suite is not None
    now = utcnow()
    run.status, run.finished_at = FINISHED, now
    started = run.created_at if run.created_at.tzinfo else run.created_at.replace(tzinfo=now.tzinfo)
    run.duration_s = round((now - started).total_seconds(), 3)
    session.flush()
    update_flips(session, run, suite)
    previous = previous_run(session, run)
    comparison = (suite_compare.compare(outcomes(session, previous.id), outcomes(session, run.id))
                  if previous else None)
    run.previous_run_id = previous.id if previous else None
    run.compare = ({"previous_run_id": previous.id, **comparison.as_dict(limit=STORED_CHANGES)}
                   if previous and comparison else {})
    run.totals = {**totals(session, run), **drift.summary(drift.find(session, run, suite)),
                  **perf.summary(*perf.find(session, run, suite, previous))}
    session.flush()
    log.info("suite_run.finished suite_run_id=%s cases=%s regressions=%s", run.id, run.totals.get("cases"),
             len(comparison.regressions) if comparison else 0)
    if comparison and comparison.regressions and webhooks.owner_news(suite, run):
        webhooks.enqueue_regressions(session, suite, run, comparison)


def refinish(session: Session, run: SuiteRun) -> None:
    """New results arrived for a finished run (an upload): show them."""
    if run.status == FINISHED:
        finish(session, run)
