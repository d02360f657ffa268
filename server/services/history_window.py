"""The window an operator's history is read through, and the shape of one run's point
(server.services.history and server.services.history_spans both build on it; docs/history.md)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

DEFAULT_RUNS = 100  # the last N runs when no date range is given
MAX_RUNS = 5000  # one page at most, also for a date range
MAX_BUCKETS = 1000
# Per-run values, each the worst (max) over the run's cases; buckets keep their min and max.
VALUES = ("max_abs_diff", "graph_max_abs_diff", "aicore_time_us", "utilization")


@dataclass
class Window:
    mode: str | None = None
    limit: int | None = None  # None: DEFAULT_RUNS, or MAX_RUNS within a date range
    since: datetime | None = None
    until: datetime | None = None
    cursor: int | None = None  # a run's job id: only runs older than it
    buckets: int | None = None  # downsample each mode to at most this many points
    case: str | None = None  # one case: its own values, only the runs that stored it

    def runs_wanted(self) -> int:
        if self.limit is not None:
            return max(1, min(self.limit, MAX_RUNS))
        return MAX_RUNS if (self.since or self.until) else DEFAULT_RUNS


def _point(job_id: int, run: Any, commit: Any, branch: Any, diff: Any, gdiff: Any, atol: Any, rtol: Any, us: Any,
           util: Any, cases: int) -> dict[str, Any]:
    p = {"job_id": job_id, "first_job_id": job_id, "mode": run.mode, "created_at": run.created_at,
         "until": run.created_at, "commit": commit, "branch": branch, "max_abs_diff": diff,
         "graph_max_abs_diff": gdiff, "atol": atol, "rtol": rtol, "aicore_time_us": us, "utilization": util,
         "cases": cases, "runs": 1}
    for key in VALUES:
        p[f"{key}_min"] = p[key]
    return p
