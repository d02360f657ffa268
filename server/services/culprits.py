"""Culprits of a suite run: the commit `crosscheck ci run --bisect` or `crosscheck bisect --suite-run`
named for each regressed operator. One per (run, operator); sending the same again changes nothing,
a different commit replaces it. A change queues a `suite_run.culprits` webhook (docs/ci.md)."""
from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.errors import InvalidInput
from server.models import Suite, SuiteRun, SuiteRunCulprit, SuiteRunResult
from server.services import webhooks

SHA = re.compile(r"^[0-9a-f]{7,64}$")


def listing(session: Session, run_id: int) -> list[SuiteRunCulprit]:
    return list(session.scalars(select(SuiteRunCulprit).where(SuiteRunCulprit.suite_run_id == run_id)
                                .order_by(SuiteRunCulprit.operator)))


def by_operator(session: Session, run_id: int) -> dict[str, SuiteRunCulprit]:
    return {c.operator: c for c in listing(session, run_id)}


def _check(session: Session, run: SuiteRun, items: list[Any]) -> list[tuple[str, str, str, str]]:
    operators = set(session.scalars(select(SuiteRunResult.operator).where(SuiteRunResult.suite_run_id == run.id)
                                    .distinct()))
    out, seen = [], set()
    for i, item in enumerate(items):
        op, commit = item.operator.strip(), item.commit.strip().lower()
        if op in seen:
            raise InvalidInput(f"items[{i}]: operator {op!r} is named twice")
        seen.add(op)
        if op not in operators:
            raise InvalidInput(f"items[{i}]: suite run {run.id} has no operator {op!r}")
        if not SHA.match(commit):
            raise InvalidInput(f"items[{i}].commit {item.commit!r}: give the commit's sha (7-64 hex digits)")
        out.append((op, commit, " ".join(item.subject.split()), item.metric))
    return out


def attach(session: Session, run: SuiteRun, items: list[Any], caller: str) -> list[SuiteRunCulprit]:
    """Store the culprits (validated first: a bad item stores none); notify when anything changed."""
    wanted = _check(session, run, items)
    have = by_operator(session, run.id)
    changed = False
    for op, commit, subject, metric in wanted:
        row = have.get(op)
        if row is not None and (row.commit, row.subject, row.metric) == (commit, subject, metric):
            continue
        if row is None:
            row = SuiteRunCulprit(suite_run_id=run.id, operator=op)
            session.add(row)
        row.commit, row.subject, row.metric, row.created_by = commit, subject, metric, caller
        changed = True
    session.flush()
    rows = listing(session, run.id)
    suite = session.get(Suite, run.suite_id)
    if changed and suite is not None:
        webhooks.enqueue_culprits(session, suite, run, [as_dict(c) for c in rows])
    return rows


def as_dict(c: SuiteRunCulprit) -> dict[str, str]:
    return {"operator": c.operator, "commit": c.commit, "subject": c.subject, "metric": c.metric}
