"""The one line per finished job that `crosscheck up` prints: operator, mode, verdict counts, link.

Read from the database the API writes (not over HTTP: the console's own polling would fill the
API's access log in --verbose mode)."""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from runtime import vocabulary
from server.db import session_scope
from server.models.base import utcnow
from server.models import Job, Operator
from server.models.job import ERROR, FINISHED

log = logging.getLogger(__name__)
MAX_ERROR_CHARS = 60


def job_line(job_id: int, operator: str, mode: str, status: str, summary: dict[str, Any], error: str | None,
             base_url: str) -> str:
    """`job 3 softmax (sim): acceptable ×2 (sim_garbage_graph_ok ×2)  http://.../jobs/3`: the outcomes in the
    words every surface uses (runtime.vocabulary), then the verdicts."""
    verdicts = summary.get("verdicts") or {}
    outcomes = summary.get("outcomes") or {}
    if verdicts:
        listed = ", ".join(f"{v} ×{n}" if n > 1 else v
                           for v, n in sorted(verdicts.items(), key=lambda item: (-item[1], item[0])))
        words = "; ".join(vocabulary.word(o) + (f" ×{outcomes[o]}" if outcomes[o] > 1 else "")
                          for o in vocabulary.OUTCOMES if outcomes.get(o))
        outcome = f"{words} ({listed})" if words else listed
    elif error:
        first = error.strip().splitlines()[0] if error.strip() else status
        outcome = f"{status}: {first[:MAX_ERROR_CHARS]}{'…' if len(first) > MAX_ERROR_CHARS else ''}"
    else:
        outcome = status if status != ERROR else "error"
    return f"job {job_id} {operator} ({mode}): {outcome}  {base_url}/jobs/{job_id}"


class JobFeed:
    """The jobs that finished since the feed started, each once."""

    def __init__(self, base_url: str, since: datetime | None = None):
        self.base_url = base_url.rstrip("/")
        self.since = since or utcnow()
        self.shown: set[int] = set()

    def poll(self) -> list[str]:
        """Lines for the jobs that finished since the last poll (none when the database is busy)."""
        stmt = (select(Job.id, Operator.name, Job.mode, Job.status, Job.summary, Job.error)
                .join(Operator, Operator.id == Job.operator_id)
                .where(Job.status.in_(FINISHED), Job.finished_at >= self.since).order_by(Job.finished_at, Job.id))
        try:
            with session_scope() as session:
                rows = [r for r in session.execute(stmt) if r.id not in self.shown]
        except SQLAlchemyError as exc:  # a locked SQLite file: the next poll shows them
            log.debug("job_feed.poll_failed error=%s", exc)
            return []
        self.shown.update(r.id for r in rows)
        return [job_line(r.id, r.name, r.mode, r.status, r.summary or {}, r.error, self.base_url) for r in rows]
