"""How many of an operator's cases each mode has judged: the denominator beside every summary.

A case counts for SIM and NPU when its latest state holds a result of that mode, and for graph
verify when that SIM result carries a graph verdict (pass or fail); "unavailable" is no evidence.
A SIM result counts only when its kernel ran (corroborated launches > 0: a script that never imported
checked nothing), and never for a script run whole: its one result stands for none of the cases its
test_cases.json lists (docs/dashboard.md §4).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from server.models import CaseResult, CaseState

MODES = ("sim", "graph", "npu")
LABELS = {"sim": "SIM", "graph": "graph", "npu": "NPU"}
GRAPH_JUDGED = ("pass", "fail")
RUN_WHOLE_CASE = "main"  # the case name of a script run whole (runtime.case_runner.MAIN_CASE)


def kernel_ran(result: Any) -> bool:
    """Whether a SIM result checked anything: its kernel launched, and it is not a run-whole script's."""
    return result is not None and (result.kernel_launches or 0) > 0 and result.case != RUN_WHOLE_CASE


@dataclass(frozen=True)
class Coverage:
    total: int
    sim: int
    graph: int
    npu: int

    def of(self, mode: str) -> int:
        return int(getattr(self, mode))

    def full(self, mode: str) -> bool:
        return self.total > 0 and self.of(mode) == self.total

    def text(self, mode: str) -> str:
        """'NPU 1/2 cases'."""
        return f"{LABELS[mode]} {self.of(mode)}/{self.total} case{'' if self.total == 1 else 's'}"


def of_operator(op: Any) -> Coverage:
    """Coverage as results.refresh_operator counted it on the operator's row (the overview's one read)."""
    return Coverage(total=op.case_count, sim=op.sim_cases, graph=op.graph_cases, npu=op.npu_cases)


def for_operators(session: Session, operator_ids: list[int]) -> dict[int, Coverage]:
    """Coverage of many operators in one aggregate query."""
    if not operator_ids:
        return {}
    ran = and_(CaseResult.kernel_launches > 0, CaseResult.case != RUN_WHOLE_CASE)
    sim = case((ran, 1), else_=0)
    graph = case((and_(ran, CaseResult.graph_status.in_(GRAPH_JUDGED)), 1), else_=0)
    rows = session.execute(
        select(CaseState.operator_id, func.count(), func.coalesce(func.sum(sim), 0),
               func.coalesce(func.sum(graph), 0), func.count(CaseState.npu_result_id))
        .outerjoin(CaseResult, CaseResult.id == CaseState.sim_result_id)
        .where(CaseState.operator_id.in_(operator_ids)).group_by(CaseState.operator_id))
    out = {i: Coverage(0, 0, 0, 0) for i in operator_ids}
    for op_id, total, sim, g, npu in rows:
        out[op_id] = Coverage(int(total), int(sim), int(g), int(npu))
    return out
