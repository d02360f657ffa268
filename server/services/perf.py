"""Performance regressions in SIM, before any NPU (docs/ci.md, "Performance regressions").

Every SIM case stores the cost model's estimate (`aicore_time_us`, `total_cycles`). For the same kernel,
shapes and pypto it is the same number run after run (docs/bisect.md §4), so a single earlier run is a
baseline. A case of a finished suite run regresses when its estimate is at least the suite's
`perf_threshold` percent above the same case's in the previous finished run on the branch, both run with
the same pypto version: a pypto upgrade changes the cost model, not the kernel, and is reported as
such (`pypto_changed`), never as a slowdown. Never red by itself; `crosscheck ci run --fail-on perf` gates.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runtime import numbers
from server.models import CaseResult, Job, Suite, SuiteRun, SuiteRunResult
from server.models.suite_run import DONE

LISTED = 50  # regressions kept on the run row; the count is of all


@dataclass
class Slowdown:
    operator: str
    case: str
    mode: str
    aicore_us: float
    previous_us: float
    cycles: int | None
    previous_cycles: int | None
    pypto: str | None
    previous_run_id: int
    rise: float  # (aicore_us - previous_us) / previous_us
    why: str


@dataclass
class _Estimate:
    us: float
    cycles: int | None
    pypto: str | None


def find(session: Session, run: SuiteRun, suite: Suite, previous: SuiteRun | None) -> tuple[list[Slowdown], int]:
    """(the regressed cases, how many cases were not compared because pypto changed)."""
    if previous is None:
        return [], 0
    now, before = _estimates(session, run.id), _estimates(session, previous.id)
    limit = 1 + suite.perf_threshold / 100
    found: list[Slowdown] = []
    pypto_changed = 0
    for key, e in sorted(now.items()):
        p = before.get(key)
        if p is None or p.us <= 0:
            continue
        if e.pypto != p.pypto:
            pypto_changed += 1
            continue
        if e.us >= limit * p.us * (1 - 1e-9):  # "by 10% or more": exactly at the threshold counts
            rise = e.us / p.us - 1
            cycles = f", {p.cycles} → {e.cycles} cycles" if e.cycles is not None and p.cycles is not None else ""
            found.append(Slowdown(*key, e.us, p.us, e.cycles, p.cycles, e.pypto, previous.id, rise,
                                  f"cost model {p.us:.4g} → {e.us:.4g} {numbers.AICORE_US} (+{rise:.0%}){cycles} "
                                  f"against run {previous.id}, both pypto {e.pypto or 'unknown'}"))
    return found, pypto_changed


def _estimates(session: Session, run_id: int) -> dict[tuple[str, str, str], _Estimate]:
    """(operator, case, "sim") -> the latest attempt's estimate, with the pypto of the job that ran it."""
    rows = session.execute(select(SuiteRunResult.operator, SuiteRunResult.case, SuiteRunResult.attempt,
                                  CaseResult.aicore_time_us, CaseResult.total_cycles, Job.env_fingerprint)
                           .join(CaseResult, CaseResult.id == SuiteRunResult.case_result_id)
                           .join(Job, Job.id == CaseResult.job_id)
                           .where(SuiteRunResult.suite_run_id == run_id, SuiteRunResult.status == DONE,
                                  SuiteRunResult.mode == "sim", CaseResult.aicore_time_us.is_not(None))).all()
    latest: dict[tuple[str, str, str], tuple[int, _Estimate]] = {}
    for r in rows:
        key = (r.operator, r.case, "sim")
        if key not in latest or r.attempt >= latest[key][0]:
            pypto = (r.env_fingerprint or {}).get("pypto")
            latest[key] = (r.attempt, _Estimate(float(r.aicore_time_us), r.total_cycles,
                                                str(pypto) if pypto else None))
    return {k: e for k, (_, e) in latest.items()}


def summary(found: list[Slowdown], pypto_changed: int) -> dict[str, Any]:
    """What the run row keeps: the count, the first LISTED, and the cases a pypto change left uncompared."""
    return {"perf": len(found), "perf_regressions": [asdict(s) for s in found[:LISTED]],
            "perf_pypto_changed": pypto_changed}
