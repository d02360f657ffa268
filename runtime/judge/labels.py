"""What a case's report says about how its evidence was made, read from its job's events (runtime/case_runner.py):
the torch_npu fused ops its golden ran as the SIM stand-in's CPU references (docs/realops.md §12), and graph
verify run on row slices (docs/pypto.md §10)."""
from __future__ import annotations

from typing import Any

from runtime.report import CaseResult

MAX_LABELS = 20


def add(case: CaseResult, events: list[Any]) -> None:
    """Set case.cpu_references and graph_verify["row_slices"] from the job's events."""
    own = [e for e in events if isinstance(e, dict)]
    case.cpu_references = [str(name)[:80] for e in own if e.get("event") == "torch_npu" and e.get("standin") is True
                           and isinstance(e.get("references"), list) for name in e["references"]][:MAX_LABELS]
    sliced = [e for e in own if e.get("event") == "graph_row_slices"]
    if sliced and case.graph_verify is not None:
        case.graph_verify["row_slices"] = [{k: e.get(k) for k in ("kernel", "dim", "rows", "slices")}
                                           for e in sliced][:MAX_LABELS]
