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
    graph = case.graph_verify
    if graph is None:
        return
    sliced = [e for e in own if e.get("event") == "graph_row_slices"]
    if sliced:
        graph["row_slices"] = [{**{k: e.get(k) for k in ("kernel", "dim", "rows", "slices", "launched")},
                                **_verified(graph, e)} for e in sliced][:MAX_LABELS]
    compared = _compared(graph)  # the harness's, whatever the job's events say
    if compared and graph.get("status") in ("pass", "fail"):  # a graph verdict of some rows only
        case.verdict_reason = (f"{case.verdict_reason}; graph verify on row slices: "
                               f"{_rows_text(compared['verified'], compared['of'])}")


def _compared(graph: dict[str, Any]) -> dict[str, Any] | None:
    """The rows the graph's result was compared on, when a sliced launch covered only some (runtime.evidence.dumps)."""
    m = graph.get("metrics") if isinstance(graph.get("metrics"), dict) else {}
    found = [o.get("rows") for o in [m, *(m.get("outputs") or [])] if isinstance(o, dict) and o.get("rows")]
    return found[0] if found else None


def _verified(graph: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """The rows graph evidence covers: those the harness compared (its recompare's `rows`, runtime.evidence.dumps)
    when the slices were launched in part, else all the launch's rows."""
    compared = _compared(graph)
    if compared:
        return {"verified": compared["verified"], "of": compared["of"]}
    try:
        of = int(event.get("of") or int(event["rows"]) * int(event["slices"]))
    except (KeyError, TypeError, ValueError):
        return {}
    judged = graph.get("status") in ("pass", "fail")  # a graph verdict: on every row, having none of its own
    return {"verified": [[0, of]] if judged else [], "of": of}


def row_slices_text(cut: dict[str, Any]) -> str:
    """One sliced launch in words, naming exactly the rows its graph evidence covers (docs/pypto.md §10)."""
    head = (f"{cut.get('kernel')} launched on {cut.get('launched', cut.get('slices'))} of {cut.get('slices')} "
            f"slices of {cut.get('rows')} rows of dim {cut.get('dim')}, which its loop makes independent")
    verified = cut.get("verified") or []
    return f"{head}; {_rows_text(verified, cut.get('of')) if verified else 'no graph evidence (no graph verdict)'}"


def _rows_text(verified: list[list[int]], of: Any) -> str:
    if verified == [[0, of]]:
        return f"graph evidence for all {of} rows"
    spans = ", ".join(f"{a}-{b - 1}" for a, b in verified)
    count = sum(b - a for a, b in verified)
    return f"graph evidence for rows {spans} only ({count} of {of}; the other slices were not launched)"
