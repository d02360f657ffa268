"""The operator page's max |diff| chart: SIM raw, graph verify and NPU side by side per submission.

- x: submissions in time order (a slot holds the SIM and NPU jobs of one submission, so a case's
  runs sit together), labelled with date and commit;
- y: log scale over the real measurements; SIM garbage (≥ 1e6, NaN, ∞) is clamped into a band at the
  top ("≥ 1e6: garbage") so that it never flattens the real range, and nothing is drawn off the axes;
- a failed graph verify is drawn as a failure, never as a healthy point (a fake pass "matches" at 0);
- one submission is a compact figure, not half a screen of empty axes.
"""
from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from web.charts import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, ZERO_FLOOR_DECADES, Chart, Series, _finite
from web.format import FAKE_GRAPH_TEXT, GARBAGE_ABS_DIFF, sig

TITLE, Y_LABEL = "max |diff| per submission", "max |diff| (log)"
BAND_H = 30  # the garbage band at the top of the plot, in chart pixels
SAME_SUBMISSION_S = 5.0  # a SIM and an NPU job created this close together belong to one submission
OFFSET = {"sim": -8.0, "graph": 0.0, "npu": 8.0}  # side by side within a slot
PAD_X = 16.0  # keeps the offset markers inside the axes
NAMES = {"sim": "SIM raw", "graph": "graph verify", "npu": "NPU"}
MAX_X_TICKS = 6
GARBAGE_DECADE = round(math.log10(GARBAGE_ABS_DIFF))


def slots(points: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Runs grouped into submissions, oldest first: a new slot when time moves on or a mode repeats."""
    runs = sorted(points, key=lambda p: (p.get("created_at") is None, p.get("created_at") or 0, p["job_id"]))
    out: list[list[dict[str, Any]]] = []
    for run in runs:
        last = out[-1] if out else None
        if (last and run.get("created_at") is not None and last[0].get("created_at") is not None
                and (run["created_at"] - last[0]["created_at"]).total_seconds() <= SAME_SUBMISSION_S
                and run["mode"] not in {r["mode"] for r in last}):
            last.append(run)
        else:
            out.append([run])
    return out


def _values(slot: list[dict[str, Any]], failed: Collection[int]) -> list[tuple[str, Any, dict[str, Any], bool]]:
    """(series css, value, run, graph failed) for each value a slot shows."""
    out = []
    for run in slot:
        if run["mode"] == "sim":
            out.append(("sim", run.get("max_abs_diff"), run, False))
            if run.get("graph_max_abs_diff") is not None or run["job_id"] in failed:
                out.append(("graph", run.get("graph_max_abs_diff"), run, run["job_id"] in failed))
        else:
            out.append(("npu", run.get("max_abs_diff"), run, False))
    return out


def _garbage(css: str, value: Any) -> bool:
    if value is None:
        return False
    return not _finite(value) or value >= GARBAGE_ABS_DIFF if css == "sim" else _finite(value) and value >= GARBAGE_ABS_DIFF


def _label(slot: list[dict[str, Any]]) -> str:
    run = slot[0]
    when = run.get("created_at")
    text = when.strftime("%m-%d %H:%M") if when else f"#{run['job_id']}"
    commit = next((r.get("commit") for r in slot if r.get("commit")), None)
    return f"{text} · {str(commit)[:7]}" if commit else text


def build(points: list[dict[str, Any]], failed_graph: Collection[int] = frozenset()) -> Chart:
    """The chart of an operator's runs (web.history points); `failed_graph`: SIM jobs whose graph verify failed."""
    groups = slots(points)
    values = [v for slot in groups for v in _values(slot, failed_graph)]
    if not any(v is not None for _, v, _, _ in values):
        return Chart(TITLE, Y_LABEL, [], [], [], empty=True)
    tols = [r["atol"] for slot in groups for r in slot if _finite(r.get("atol")) and r["atol"] > 0]
    tol = tols[-1] if tols else None
    if len(groups) == 1:
        return _compact(values, tol)
    measured = [v for css, v, _, _ in values if _finite(v) and 0 < v < GARBAGE_ABS_DIFF] + ([tol] if tol else [])
    lo = math.floor(math.log10(min(measured))) if measured else -6
    hi = min(math.ceil(math.log10(max(measured))) if measured else 0, GARBAGE_DECADE)
    zero_at = lo - ZERO_FLOOR_DECADES
    if any(_finite(v) and v <= 0 for _, v, _, _ in values):
        lo = zero_at
    hi = max(hi, lo + 1)
    band = any(_garbage(css, v) for css, v, _, _ in values)
    top = TOP + (BAND_H if band else 0)
    bottom = HEIGHT - BOTTOM

    def y_of(decade: float) -> float:
        return top + (bottom - top) * (hi - decade) / (hi - lo)

    plot_w = WIDTH - LEFT - RIGHT - 2 * PAD_X
    xs = [LEFT + PAD_X + (plot_w * i / (len(groups) - 1)) for i in range(len(groups))]
    series = {css: Series(name, css) for css, name in NAMES.items()}
    notes: set[str] = set()
    for x, slot in zip(xs, groups):
        for css, value, run, failed in _values(slot, failed_graph):
            if value is None and not failed:
                continue
            where = f"{NAMES[css]} · job #{run['job_id']}"
            if _garbage(css, value):
                marker, y = "garbage", TOP + BAND_H / 2 - 2
                title = f"{where} · max |diff| {sig(value)} (≥ 1e{GARBAGE_DECADE}: garbage, drawn in the band)"
            elif not _finite(value) and not failed:
                notes.add(f"{NAMES[css]}: non-finite values are left out")
                continue
            elif failed and (value is None or not _finite(value) or value <= 0):
                marker, y = "failed", y_of(zero_at if lo == zero_at else lo)
                title = f"{where} · ✗ {FAKE_GRAPH_TEXT}"
            else:
                exact = value <= 0
                marker = "failed" if failed else ("zero" if exact else "")
                y = y_of(zero_at if exact else math.log10(value))
                title = f"{where} · max |diff| {'0 (exact)' if exact else sig(value)}" + (" · ✗ failed" if failed else "")
            series[css].points.append({"x": x + OFFSET[css], "y": y, "marker": marker, "title": title})
    step = max(1, math.ceil((hi - lo) / 6))
    y_ticks = [{"y": y_of(d), "label": "0" if d == zero_at and lo == zero_at else f"1e{d}"}
               for d in range(lo, hi + 1, step)]
    every = max(1, math.ceil(len(groups) / MAX_X_TICKS))
    x_ticks = [{"x": xs[i], "label": _label(groups[i])} for i in range(0, len(groups), every)]
    tolerance = {"y": y_of(math.log10(tol)), "label": f"atol {tol:.3g}"} if tol and lo <= math.log10(tol) <= hi else None
    chart = Chart(TITLE, Y_LABEL, [s for s in series.values() if s.points], y_ticks, x_ticks, tolerance,
                  notes=sorted(notes))
    chart.band = {"y": TOP, "h": BAND_H - 4, "label": f"≥ 1e{GARBAGE_DECADE}: garbage"} if band else None
    return chart


def _compact(values: list[tuple[str, Any, dict[str, Any], bool]], tol: float | None) -> Chart:
    """One submission: its numbers as a small figure."""
    facts = []
    for css, value, _run, failed in values:
        if failed and (value is None or value == 0):
            text, cls = f"✗ {FAKE_GRAPH_TEXT}", "bad words"  # a sentence: it may wrap
        elif _garbage(css, value):
            text, cls = f"{sig(value)} (garbage)", "muted"
        else:
            text, cls = ("✗ " if failed else "") + sig(value), "bad" if failed else ""
        facts.append({"name": NAMES[css], "text": text, "css": cls})
    if tol:
        facts.append({"name": "tolerance", "text": f"atol {tol:.3g}", "css": "muted"})
    chart = Chart(TITLE, Y_LABEL, [], [], [])
    chart.compact = facts
    return chart
