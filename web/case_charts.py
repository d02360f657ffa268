"""The operator page's per-case small multiples: each case's own max |diff| (SIM raw, graph verify,
NPU) on axes shared by all cases, worst cases first (docs/history.md §5)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from server.services import history
from server.services.combined import SEVERITY
from web import diff_chart
from web.charts import Chart, _finite

MAX_CASES = 12  # drawn; the rest are listed as links to ?case=


@dataclass
class CaseChart:
    case: str
    verdict: str | None  # the latest combined verdict
    chart: Chart


@dataclass
class PerCase:
    shown: list[CaseChart] = field(default_factory=list)
    more: list[str] = field(default_factory=list)  # not drawn, in the same order


def worst_trusted(points: list[dict[str, Any]]) -> float:
    """The worst NPU or graph-verify diff in the window (SIM raw is garbage on CPU hosts), -1 if none."""
    values = [p["max_abs_diff"] if p["mode"] == "npu" else p["graph_max_abs_diff"] for p in points]
    return max((v for v in values if _finite(v)), default=-1.0)


def order(by_case: dict[str, list[dict[str, Any]]], verdicts: dict[str, str]) -> list[str]:
    """Worst first: the latest combined verdict's severity (defects first), then the worst diff, then name."""
    rank = len(SEVERITY)
    return sorted(by_case, key=lambda c: (SEVERITY.get(verdicts.get(c, ""), rank), -worst_trusted(by_case[c]), c))


def build(session: Session, operator_id: int, window: history.Window, runs: list[dict[str, Any]],
          verdicts: dict[str, str], walked: list[history.Run] | None = None) -> PerCase:
    """One query for every case's points; `runs` (the all-cases points) give the shared x slots;
    `walked`: the window's runs when they are already known (history.runs_of)."""
    by_case = history.case_history(session, operator_id, window, walked)
    if len(by_case) < 2:  # one case: the main chart already is that case
        return PerCase()
    names = order(by_case, verdicts)
    shown = names[:MAX_CASES]
    failed = {c: {p["job_id"] for p in by_case[c] if p.get("graph_failed")} for c in shown}
    drawn = [p for c in shown for p in by_case[c]]
    frame = diff_chart.frame_for(runs or drawn, drawn, set().union(*failed.values()))
    charts = [CaseChart(c, verdicts.get(c), diff_chart.build(by_case[c], failed[c], frame, small=True,
                                                             title=f"max |diff| of case {c}"))
              for c in shown]
    return PerCase(charts, names[MAX_CASES:])
