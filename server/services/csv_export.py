"""CSV exports of the operator table, an operator's case table and a suite run's results.

Cells that a spreadsheet would run as a formula (=, +, -, @ and control characters first) are
prefixed with a quote: operator and case names come from users (CSV injection).
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from server.services.provenance import describe

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

OPERATOR_COLUMNS = ("operator", "combined_verdict", "cases", "sim_verdict", "npu_verdict", "graph_status",
                    "graph_max_abs_diff", "npu_max_abs_diff", "npu_tolerance", "aicore_time_us", "branch", "commit",
                    "author", "updated_at")
CASE_COLUMNS = ("operator", "case", "combined_verdict", "reason", "sim_verdict", "sim_max_abs_diff", "graph_status",
                "graph_max_abs_diff", "npu_verdict", "npu_max_abs_diff", "npu_atol", "npu_rtol", "npu_provenance",
                "aicore_time_us", "diagnosis", "sim_job", "npu_job")
RESULT_COLUMNS = ("operator", "case", "mode", "attempt", "status", "verdict", "max_abs_diff", "graph_max_abs_diff",
                  "rtol", "atol", "diagnosis_rules", "provenance", "verified", "job_id", "reused_from_job_id",
                  "flips", "flaky", "note")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value


def write(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(columns)
    for row in rows:
        out.writerow([_cell(v) for v in row])
    return buf.getvalue()


def operators(ops: Iterable[Any]) -> str:
    return write(OPERATOR_COLUMNS, ([op.name, op.combined_verdict, op.case_count, op.sim_verdict, op.npu_verdict,
                                     op.graph_status, op.graph_max_abs_diff, op.npu_max_abs_diff, op.npu_tolerance,
                                     op.aicore_time_us, (op.labels or {}).get("branch"), (op.labels or {}).get("commit"),
                                     (op.labels or {}).get("author"), op.updated_at.isoformat()] for op in ops))


def cases(operator: str, items: Iterable[dict[str, Any]]) -> str:
    def row(c: dict[str, Any]) -> list[Any]:
        sim, npu = c["sim"], c["npu"]
        return [operator, c["case"], c["combined_verdict"], c["reason"], sim.verdict if sim else None,
                sim.max_abs_diff if sim else None, sim.graph_status if sim else None,
                sim.graph_max_abs_diff if sim else None, npu.verdict if npu else None,
                npu.max_abs_diff if npu else None, npu.atol if npu else None, npu.rtol if npu else None,
                describe(npu) if npu else None, sim.aicore_time_us if sim else None,
                " ".join(filter(None, [sim.diagnosis_rules if sim else "", npu.diagnosis_rules if npu else ""])),
                sim.job_id if sim else None, npu.job_id if npu else None]

    return write(CASE_COLUMNS, (row(c) for c in items))


def results(items: Iterable[dict[str, Any]]) -> str:
    return write(RESULT_COLUMNS, ([r[k] for k in RESULT_COLUMNS] for r in items))
