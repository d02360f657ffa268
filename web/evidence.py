"""What decides a case's verdict, shown first; how each stage fared, graph verify included.

The runtime's stage list says whether a stage *ran*; the verdict says whether its result was
accepted. A stage whose result was rejected (a fake pass's compare, a failed graph verify) is
not drawn green.
"""
from __future__ import annotations

from typing import Any

from runtime import numbers, verdicts

GRAPH_STAGE = "graph verify"
# Verdicts where the comparison ran and its result condemned (or was refused for) the kernel.
REJECTED_AT_COMPARE = ("precision_fail", "suspect_fake_pass")
GRAPH_STATUS = {"pass": "ok", "fail": "rejected", "error": "error", "unavailable": "skipped"}
# Every figure the Metrics box shows: a source that measured fewer (graph verify of an output the
# kernel never wrote measures none) shows "—" for the rest, never an error.
METRIC_KEYS = ("max_abs_diff", "max_rel_diff", "mismatch_ratio", "mismatch_count", "numel", "nan_count", "inf_count",
               "output_abs_max", "golden_abs_max", "rtol", "atol", "shape_match", "dtype_match")


def complete(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """The metrics with every METRIC_KEYS key present (None where not measured)."""
    return {**dict.fromkeys(METRIC_KEYS), **(metrics or {})}


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
        return {"source": "NPU", "status": _status(report.get("precision")), "metrics": complete(metrics), "raw": None}
    gv = report.get("graph_verify") or {}
    if gv.get("status") in ("pass", "fail"):
        return {"source": "graph verify", "status": "ok" if gv["status"] == "pass" else "bad",
                "metrics": complete(gv.get("metrics")), "reason": gv.get("reason") or "",
                "unwritten": gv.get("output_written") is False, "raw": complete(metrics) if metrics else None}
    if metrics is None:
        return None
    return {"source": "SIM output", "status": _status(report.get("precision")), "metrics": complete(metrics),
            "raw": None}


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


def lead(decided: dict[str, Any] | None, verdict: str, mode: str, output_written: bool | None) -> dict[str, Any] | None:
    """The line a case's section opens with: what decided its verdict and the numbers against the
    tolerance, in the one formatter (runtime.numbers). None when nothing was compared."""
    if decided is None:
        return None
    m = decided["metrics"]
    ok = verdicts.acceptable(verdict, mode)
    if decided.get("unwritten"):
        evidence = "the kernel never wrote the output, so there is nothing of the kernel's to compare"
    elif decided["source"] == "SIM output" and numbers.is_sim_garbage(m["max_abs_diff"], m["nan_count"],
                                                                       output_written, verdict):
        evidence = f"max |diff| {numbers.sim_diff_text(m['max_abs_diff'], m['nan_count'], garbage=True)}"
    else:
        evidence = f"max |diff| {numbers.sig(m['max_abs_diff'])}"
        if m["atol"] is not None:
            evidence += f" / atol {numbers.sig(m['atol'])}"
        if m["mismatch_count"]:
            evidence += f" · {numbers.sig(m['mismatch_count'])} of {numbers.sig(m['numel'])} elements mismatched"
        counts = numbers.nan_inf(m["nan_count"], m["inf_count"])
        if counts not in ("none", "—"):
            evidence += f" · {counts}"
    return {"source": f"Decided by {decided['source']}", "evidence": evidence, "ok": ok}
