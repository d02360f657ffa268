"""What was measured of a case, step by step, as a small picture: parsed, compiled, ran, graph verified, NPU
precision (docs/dashboard.md §4). Each step is measured and held, measured and failed, or not measured; a step
is never drawn as measured on the strength of a later one, and a step after a failure is not measured.

Read from a case's latest results (server.models.CaseResult rows, or anything with the same attributes): the
SIM result says parsed/compiled/ran and graph verify, the NPU result ran and precision.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime import numbers, verdicts

STEPS = ("parsed", "compiled", "ran", "graph verified", "NPU precision")
OK, FAIL, NONE = "ok", "fail", "none"
_RAN_FAILED = ("crash", "timeout", "oom")
# The geometry of one case's strip and of an operator's bars (web/templates/_charts.html measured_*).
CELL, GAP = 14, 4
BAR_W, ROW_H, LABEL_W = 160, 16, 104


@dataclass(frozen=True)
class Step:
    name: str
    state: str  # ok | fail | none
    why: str  # the step's evidence or why it was not measured, for the cell's title


def _get(r: Any, key: str) -> Any:
    return r.get(key) if isinstance(r, dict) else getattr(r, key, None)


def _kernel_steps(r: Any, mode: str) -> list[Step]:
    """parsed, compiled, ran from one mode's result."""
    verdict, stage = _get(r, "verdict") or "", _get(r, "stage") or ""
    structural, launches = _get(r, "structural") or "", int(_get(r, "kernel_launches") or 0)
    if verdict in (verdicts.CRASH, verdicts.TIMEOUT):  # the verdict says how it ended, whatever else was stored
        structural = verdict
    job = f"{mode.upper()} job #{_get(r, 'job_id')}" if _get(r, "job_id") else mode.upper()
    if stage == "syntax" and verdict in (verdicts.STRUCTURAL_ERROR, verdicts.NOT_RUN):
        return [Step("parsed", FAIL, f"the source did not parse ({job})"),
                Step("compiled", NONE, "not measured: the source did not parse"),
                Step("ran", NONE, "not measured: the source did not parse")]
    parsed = Step("parsed", OK, f"parsed ({job})")
    if verdict == verdicts.NOT_RUN or (launches == 0 and structural in ("", "not_run")):
        why = f"not measured: the kernel was never called ({verdict.replace('_', ' ')}{', ' + stage if stage else ''})"
        return [parsed, Step("compiled", NONE, why), Step("ran", NONE, why)]
    if structural == "error" and launches == 0:
        return [parsed, Step("compiled", FAIL, f"pypto stopped tracing or compiling it ({job})"),
                Step("ran", NONE, "not measured: it did not compile")]
    if launches == 0:  # stopped (a limit, a crash) before any launch finished: what failed is not known
        return [parsed, Step("compiled", NONE, f"not measured: stopped before a launch finished ({structural})"),
                Step("ran", FAIL if structural in _RAN_FAILED else NONE, f"{structural or verdict} ({job})")]
    compiled = Step("compiled", OK, f"{launches} launch{'es' if launches != 1 else ''} compiled ({job})")
    if structural in _RAN_FAILED or structural == "error":
        return [parsed, compiled, Step("ran", FAIL, f"{structural} while running ({job})")]
    return [parsed, compiled, Step("ran", OK, f"ran {launches} launch{'es' if launches != 1 else ''} ({job})")]


def of_case(sim: Any, npu: Any) -> list[Step]:
    """The five steps of a case from its latest SIM and NPU results (either may be None)."""
    first = sim if sim is not None else npu
    if first is None:
        return [Step(s, NONE, "not measured: no result yet") for s in STEPS]
    steps = _kernel_steps(first, "sim" if sim is not None else "npu")
    if sim is not None and npu is not None and steps[2].state != OK:  # the NPU ran what SIM could not
        steps = [a if a.state == OK else b for a, b in zip(steps, _kernel_steps(npu, "npu"))]
    graph = _get(sim, "graph_status") if sim is not None else None
    if graph == "pass":
        steps.append(Step("graph verified", OK, f"graph verify matched the golden (max |diff| "
                                                f"{_sig(_get(sim, 'graph_max_abs_diff'))})"))
    elif graph == "fail":
        steps.append(Step("graph verified", FAIL, "graph verify: the tensor graph computes a wrong result"))
    else:
        steps.append(Step("graph verified", NONE, "not measured: " + (f"graph verify {graph.replace('_', ' ')}"
                                                                      if graph else "no graph verify result")))
    nv = _get(npu, "verdict") if npu is not None else None
    if nv == verdicts.PASS:
        steps.append(Step("NPU precision", OK, f"within tolerance on an NPU (max |diff| {_sig(_get(npu, 'max_abs_diff'))})"))
    elif nv == verdicts.PRECISION_FAIL:
        steps.append(Step("NPU precision", FAIL, f"outside tolerance on an NPU (max |diff| {_sig(_get(npu, 'max_abs_diff'))})"))
    else:
        steps.append(Step("NPU precision", NONE, f"not measured: {'no NPU result' if npu is None else 'NPU ' + str(nv)}"))
    return steps


def of_job_case(r: Any, mode: str) -> list[Step]:
    """A job's case: one mode's result alone."""
    return of_case(r, None) if mode == "sim" else of_case(None, r)


def _sig(value: Any) -> str:
    return numbers.sig(value)


def strip(steps: list[Step]) -> dict[str, Any]:
    """One case's steps as cells of a strip (x positions), for the measured_strip macro."""
    return {"width": len(steps) * (CELL + GAP) - GAP, "height": CELL, "cell": CELL,
            "cells": [{"x": i * (CELL + GAP), "state": s.state, "name": s.name, "why": s.why} for i, s in enumerate(steps)]}


def bars(cases: list[list[Step]]) -> dict[str, Any]:
    """An operator's cases as one bar per step: how many measured and held, failed, not measured."""
    total = len(cases)
    rows = []
    for i, name in enumerate(STEPS):
        counts = {state: sum(1 for c in cases if c[i].state == state) for state in (OK, FAIL, NONE)}
        x, parts = LABEL_W, []
        for state in (OK, FAIL, NONE):
            w = BAR_W * counts[state] / total if total else 0
            if counts[state]:
                parts.append({"x": x, "w": w, "state": state, "n": counts[state]})
            x += w
        rows.append({"name": name, "y": i * ROW_H, "parts": parts, "measured": counts[OK] + counts[FAIL],
                     "failed": counts[FAIL]})
    return {"rows": rows, "total": total, "width": LABEL_W + BAR_W + 70, "height": len(STEPS) * ROW_H,
            "label_w": LABEL_W, "bar_w": BAR_W, "row_h": ROW_H}
