"""A benchmark suite at a glance: tasks × runs, pass rates per level, and where the gym's word and ours differ.

A suite run by `crosscheck ci run --benchmark` names each operator `<level>-<task>` (runtime/intake/
benchmark_run.py); its SIM results are ours (graph verify), its NPU uploads the gym's own verdicts
(client/gym_results.py). The view reads the suite's newest runs once, in two queries (docs/kernelbench.md §6).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runtime import verdicts
from server.errors import NotFound
from server.models import CaseResult, Suite
from server.models.suite_run import SuiteRun, SuiteRunResult

RUNS_SHOWN = 12
ACCEPTED = verdicts.ACCEPTABLE["sim"] | verdicts.ACCEPTABLE["npu"]
MULTI_KERNEL_RULE = "gym-multi-kernel"


@dataclass
class Cell:
    verdict: str | None
    cheat: str = ""  # the gym's cheat class our evidence found (S5 from the launch records; else from the data flow)
    graph_diff: float | None = None
    aicore_us: float | None = None
    job_id: int | None = None


@dataclass
class Task:
    name: str
    level: str
    cells: dict[int, Cell] = field(default_factory=dict)  # run id -> our SIM result
    gym: str | None = None  # the gym's own verdict in the newest run (an NPU upload)

    @property
    def ours(self) -> str | None:
        return next((c.verdict for c in self.cells.values() if c.verdict), None)

    @property
    def disagrees(self) -> bool:
        """Ours and the gym's, both known, on different sides of acceptable."""
        if not self.gym or not self.ours or self.gym == verdicts.NOT_RUN:
            return False
        return (self.gym in ACCEPTED) != (self.ours in ACCEPTED)


@dataclass
class Level:
    name: str
    tasks: int
    ours_pass: int
    gym_pass: int
    gym_known: int


@dataclass
class BenchmarkView:
    suite: str
    runs: list[SuiteRun]
    tasks: list[Task]
    levels: list[Level]


def _level(operator: str) -> str:
    head, sep, _ = operator.partition("-")
    return head if sep else "benchmark"


def _cheat(row: SuiteRunResult) -> str:
    if row.verdict != verdicts.SUSPECT_FAKE_PASS:
        return ""
    return "S5 multi-kernel" if MULTI_KERNEL_RULE in (row.diagnosis_rules or "").split() else "fake pass"


def view(session: Session, suite_name: str, runs_shown: int = RUNS_SHOWN) -> BenchmarkView:
    suite = session.scalar(select(Suite).where(Suite.name == suite_name))
    if suite is None:
        raise NotFound(f"no suite {suite_name!r}")
    runs = list(session.scalars(select(SuiteRun).where(SuiteRun.suite_id == suite.id)
                                .order_by(SuiteRun.id.desc()).limit(runs_shown)))
    rows = session.execute(
        select(SuiteRunResult, CaseResult.aicore_time_us)
        .outerjoin(CaseResult, CaseResult.id == SuiteRunResult.case_result_id)
        .where(SuiteRunResult.suite_run_id.in_([r.id for r in runs]))).all() if runs else []
    tasks: dict[str, Task] = {}
    newest = runs[0].id if runs else None
    for row, aicore in rows:
        task = tasks.setdefault(row.operator, Task(row.operator, _level(row.operator)))
        if row.mode == "npu":
            if row.suite_run_id == newest and row.verdict:
                task.gym = row.verdict
            continue
        task.cells[row.suite_run_id] = Cell(row.verdict, _cheat(row), row.graph_max_abs_diff, aicore, row.job_id)
    for task in tasks.values():  # newest run first, so `ours` is the newest verdict
        task.cells = dict(sorted(task.cells.items(), reverse=True))
    ordered = sorted(tasks.values(), key=lambda t: (not t.disagrees, t.ours in ACCEPTED, t.level, t.name))
    return BenchmarkView(suite.name, runs, ordered, _levels(ordered))


def _levels(tasks: list[Task]) -> list[Level]:
    out: dict[str, Level] = {}
    for t in tasks:
        lv = out.setdefault(t.level, Level(t.level, 0, 0, 0, 0))
        lv.tasks += 1
        lv.ours_pass += t.ours in ACCEPTED
        if t.gym:
            lv.gym_known += 1
            lv.gym_pass += t.gym in ACCEPTED
    return sorted(out.values(), key=lambda lv: lv.name)


def as_dict(v: BenchmarkView) -> dict[str, Any]:
    """The API's form of the view."""
    return {"suite": v.suite, "runs": [{"id": r.id, "commit": r.commit, "created_at": r.created_at.isoformat()}
                                       for r in v.runs],
            "levels": [lv.__dict__ for lv in v.levels],
            "tasks": [{"name": t.name, "level": t.level, "ours": t.ours, "gym": t.gym, "disagrees": t.disagrees,
                       "runs": {str(k): c.__dict__ for k, c in t.cells.items()}} for t in v.tasks]}
