"""What decides a case's verdict, shown first; how each stage fared, graph verify included.

The runtime's stage list says whether a stage *ran*; the verdict says whether its result was
accepted. A stage whose result was rejected (a fake pass's compare, a failed graph verify) is
not drawn green.
"""
from __future__ import annotations

from typing import Any

GRAPH_STAGE = "graph verify"
# Verdicts where the comparison ran and its result condemned (or was refused for) the kernel.
REJECTED_AT_COMPARE = ("precision_fail", "suspect_fake_pass")
GRAPH_STATUS = {"pass": "ok", "fail": "rejected", "error": "error", "unavailable": "skipped"}


def stages(report: dict[str, Any], verdict: str) -> list[dict[str, Any]]:
    """The report's stages (copies), with graph verify as its own stage before compare."""
    out = [dict(s) for s in report.get("stages") or [] if isinstance(s, dict)]
    gv = report.get("graph_verify") or {}
    if gv.get("status") and not any(s.get("name") in ("graph_verify", GRAPH_STAGE) for s in out):
        graph = {"name": GRAPH_STAGE, "status": GRAPH_STATUS.get(gv["status"], "skipped"), "graph": True,
                 "duration_s": float(gv.get("duration_s") or 0), "detail": gv.get("reason") or gv["status"]}
        at = next((i for i, s in enumerate(out) if s.get("name") == "compare"), len(out))
        out.insert(at, graph)
    for s in out:
        if s.get("name") == "compare" and s.get("status") == "ok" and verdict in REJECTED_AT_COMPARE:
            s["status"], s["detail"] = "rejected", f"ran, but the verdict is {verdict.replace('_', ' ')}"
        elif s.get("name") == "lint" and s.get("status") == "ok" and str(s.get("detail", "")).split(" ")[0] not in ("", "0"):
            s["status"] = "findings"
        if s.get("name") == "graph_verify":
            s["graph"] = True
    total = sum(float(s.get("duration_s") or 0) for s in out) or 1.0
    for s in out:
        s["share"] = max(100 * float(s.get("duration_s") or 0) / total, 0.6)
    return out


def deciding(report: dict[str, Any], mode: str) -> dict[str, Any] | None:
    """The evidence the verdict stands on: the NPU's comparison, else graph verify's when it
    judged, else the SIM output's own. {source, status, metrics, garbage_raw}."""
    metrics = report.get("metrics") or None
    if mode == "npu":
        return {"source": "NPU", "status": _status(report.get("precision")), "metrics": metrics, "raw": None}
    gv = report.get("graph_verify") or {}
    if gv.get("status") in ("pass", "fail"):
        return {"source": "graph verify", "status": "ok" if gv["status"] == "pass" else "bad",
                "metrics": gv.get("metrics") or {}, "reason": gv.get("reason") or "",
                "unwritten": gv.get("output_written") is False, "raw": metrics}
    if metrics is None:
        return None
    return {"source": "SIM output", "status": _status(report.get("precision")), "metrics": metrics, "raw": None}


def _status(precision: Any) -> str:
    return {"pass": "ok", "fail": "bad"}.get(str(precision), "muted")


def cost_warning(cost: dict[str, Any] | None) -> str:
    """A cost model that saw no work is no measurement: say so instead of printing 0 µs."""
    if not cost:
        return ""
    tasks = int(cost.get("aic_tasks") or 0) + int(cost.get("aiv_tasks") or 0)
    if tasks == 0 or not cost.get("aicore_time_us"):
        return ("The cost model recorded 0 tasks / 0 µs: the simulator scheduled no kernel work, "
                "so these figures measure nothing (the kernel did not reach the cores).")
    return ""
