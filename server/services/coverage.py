"""How many of an operator's cases each mode has judged: the denominator beside every summary.

A case counts for SIM and NPU when its latest state holds a result of that mode, and for graph
verify when that SIM result carries a graph verdict (pass or fail); "unavailable" is no evidence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from server.models import CaseResult, CaseState

MODES = ("sim", "graph", "npu")
LABELS = {"sim": "SIM", "graph": "graph", "npu": "NPU"}
GRAPH_JUDGED = ("pass", "fail")


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


def of_cases(cases: list[dict[str, Any]]) -> Coverage:
    """Coverage of case summaries as queries.case_summaries returns them."""
    return Coverage(total=len(cases), sim=sum(1 for c in cases if c.get("sim") is not None),
                    graph=sum(1 for c in cases if c.get("sim") is not None
                              and c["sim"].graph_status in GRAPH_JUDGED),
                    npu=sum(1 for c in cases if c.get("npu") is not None))


def for_operators(session: Session, operator_ids: list[int]) -> dict[int, Coverage]:
    """Coverage of many operators in one aggregate query."""
    if not operator_ids:
        return {}
    graph = case((CaseResult.graph_status.in_(GRAPH_JUDGED), 1), else_=0)
    rows = session.execute(
        select(CaseState.operator_id, func.count(), func.count(CaseState.sim_result_id),
               func.coalesce(func.sum(graph), 0), func.count(CaseState.npu_result_id))
        .outerjoin(CaseResult, CaseResult.id == CaseState.sim_result_id)
        .where(CaseState.operator_id.in_(operator_ids)).group_by(CaseState.operator_id))
    out = {i: Coverage(0, 0, 0, 0) for i in operator_ids}
    for op_id, total, sim, g, npu in rows:
        out[op_id] = Coverage(int(total), int(sim), int(g), int(npu))
    return out
