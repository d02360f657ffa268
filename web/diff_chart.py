"""The operator page's max |diff| chart: SIM raw, graph verify and NPU side by side per submission.

- x: submissions in time order (a slot holds the SIM and NPU jobs of one submission, so a case's
  runs sit together), labelled with date and commit;
- y: log scale over the real measurements; SIM garbage (≥ 1e6, NaN, ∞) is clamped into a band at the
  top ("≥ 1e6: garbage") so that it never flattens the real range, and nothing is drawn off the axes;
- a failed graph verify is drawn as a failure, never as a healthy point (a fake pass "matches" at 0);
- one submission is a compact figure, not half a screen of empty axes;
- per case (small multiples): one chart per case on shared axes (Frame), so cases compare at a glance.
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from runtime import numbers
from web.charts import (BOTTOM, HEIGHT, LEFT, RIGHT, SMALL_HEIGHT, SMALL_WIDTH, TOP, WIDTH, ZERO_FLOOR_DECADES, Chart,
                        Series, _finite)
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


@dataclass
class Frame:
    """The axes of a chart, shareable: x slots (submissions) and the log y range with its garbage band.

    The per-case small multiples share one frame, so a slot sits at the same x in every case and the
    same height means the same |diff| (frame_for)."""
    groups: list[list[dict[str, Any]]]
    lo: int
    hi: int
    zero_at: int
    band: bool
    tol: float | None


def frame_for(slot_points: list[dict[str, Any]], value_points: list[dict[str, Any]],
              failed_graph: Collection[int] = frozenset()) -> Frame:
    """Slots from `slot_points` (the operator's runs); the y range from every value in `value_points`."""
    groups = slots(slot_points)
    values = _values(value_points, failed_graph)
    tols = [r["atol"] for slot in groups for r in slot if _finite(r.get("atol")) and r["atol"] > 0]
    tols = tols or [r["atol"] for r in value_points if _finite(r.get("atol")) and r["atol"] > 0]
    tol = tols[-1] if tols else None
    measured = [v for css, v, _, _ in values if _finite(v) and 0 < v < GARBAGE_ABS_DIFF] + ([tol] if tol else [])
    lo = math.floor(math.log10(min(measured))) if measured else -6
    hi = min(math.ceil(math.log10(max(measured))) if measured else 0, GARBAGE_DECADE)
    zero_at = lo - ZERO_FLOOR_DECADES
    if any(_finite(v) and v <= 0 for _, v, _, _ in values):
        lo = zero_at
    return Frame(groups, lo, max(hi, lo + 1), zero_at, any(_garbage(css, v) for css, v, _, _ in values), tol)


def _key(p: dict[str, Any]) -> tuple[Any, ...]:
    return (p.get("created_at") is None, p.get("created_at") or 0, p.get("first_job_id", p["job_id"]))


def _place(points: list[dict[str, Any]], groups: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Points into the frame's slots: each into the last slot starting at or before it (by date, then job)."""
    starts = [_key(g[0]) for g in groups]
    out: list[list[dict[str, Any]]] = [[] for _ in groups]
    for p in points:
        out[max(bisect.bisect_right(starts, _key(p)) - 1, 0)].append(p)
    return out


def build(points: list[dict[str, Any]], failed_graph: Collection[int] = frozenset(), frame: Frame | None = None,
          small: bool = False, title: str = TITLE) -> Chart:
    """The chart of an operator's runs (web.history points); `failed_graph`: SIM jobs whose graph verify failed.

    `frame`: shared axes (the per-case small multiples), else the points' own; `small`: a small multiple."""
    own = frame is None
    f = frame or frame_for(points, points, failed_graph)
    placed = f.groups if own else _place(points, f.groups)
    values = [v for slot in placed for v in _values(slot, failed_graph)]
    if not any(v is not None for _, v, _, _ in values):
        return Chart(title, Y_LABEL, [], [], [], empty=True)
    tol = f.tol
    if len(f.groups) == 1:
        chart = _compact(values, tol)
        chart.title = title
        return chart
    width, height = (SMALL_WIDTH, SMALL_HEIGHT) if small else (WIDTH, HEIGHT)
    lo, hi, zero_at, band = f.lo, f.hi, f.zero_at, f.band
    top = TOP + (BAND_H if band else 0)
    bottom = height - BOTTOM

    def y_of(decade: float) -> float:
        return top + (bottom - top) * (hi - decade) / (hi - lo)

    plot_w = width - LEFT - RIGHT - 2 * PAD_X
    xs = [LEFT + PAD_X + (plot_w * i / (len(f.groups) - 1)) for i in range(len(f.groups))]
    series = {css: Series(name, css) for css, name in NAMES.items()}
    notes: set[str] = set()
    for x, slot in zip(xs, placed):
        for css, value, run, failed in _values(slot, failed_graph):
            if value is None and not failed:
                continue
            where = f"{NAMES[css]} · job #{run['job_id']}"
            if _garbage(css, value):
                marker, y = "garbage", TOP + BAND_H / 2 - 2
                shown = numbers.sim_diff_text(value, garbage=True) if css == "sim" else sig(value)
                title_ = f"{where} · max |diff| {shown} (≥ 1e{GARBAGE_DECADE}: garbage, drawn in the band)"
            elif not _finite(value) and not failed:
                notes.add(f"{NAMES[css]}: non-finite values are left out")
                continue
            elif failed and (value is None or not _finite(value) or value <= 0):
                marker, y = "failed", y_of(zero_at if lo == zero_at else lo)
                title_ = f"{where} · ✗ {FAKE_GRAPH_TEXT}"
            else:
                exact = value <= 0
                marker = "failed" if failed else ("zero" if exact else "")
                y = y_of(zero_at if exact else math.log10(value))
                title_ = f"{where} · max |diff| {'0 (exact)' if exact else sig(value)}" + (" · ✗ failed" if failed else "")
                if css == "sim" and not exact:
                    title_ = f"{where} · max |diff| {numbers.sim_diff_text(value, garbage=True)}"
            series[css].points.append({"x": x + OFFSET[css], "y": y, "marker": marker, "title": title_})
    step = max(1, math.ceil((hi - lo) / (3 if small else 6)))
    y_ticks = [{"y": y_of(d), "label": "0" if d == zero_at and lo == zero_at else f"1e{d}"}
               for d in range(lo, hi + 1, step)]
    n = len(f.groups)
    # a small multiple labels its first and last slot: its labels stay apart down to 390 px
    shown = [0, n - 1] if small else range(0, n, max(1, math.ceil(n / MAX_X_TICKS)))
    x_ticks = [{"x": xs[i], "label": _label(f.groups[i])} for i in shown]
    tolerance = {"y": y_of(math.log10(tol)), "label": f"atol {tol:.3g}"} if tol and lo <= math.log10(tol) <= hi else None
    chart = Chart(title, Y_LABEL, [s for s in series.values() if s.points], y_ticks, x_ticks, tolerance,
                  width=width, height=height, plot_w=width - LEFT - RIGHT, plot_h=height - TOP - BOTTOM,
                  notes=sorted(notes))
    chart.band = {"y": TOP, "h": BAND_H - 4, "label": f"≥ 1e{GARBAGE_DECADE}: garbage"} if band else None
    return chart


def _compact(values: list[tuple[str, Any, dict[str, Any], bool]], tol: float | None) -> Chart:
    """One submission: its numbers as a small figure."""
    facts = []
    for css, value, _run, failed in values:
        if failed and (value is None or value == 0):
            text, cls = f"✗ {FAKE_GRAPH_TEXT}", "bad words"  # a sentence: it may wrap
        elif _garbage(css, value) or (css == "sim" and value):
            # SIM raw on a CPU host is leftover memory at any size: the one garbage rendering (runtime.numbers)
            text, cls = numbers.sim_diff_text(value, garbage=True), "muted"
        else:
            text, cls = ("✗ " if failed else "") + sig(value), "bad" if failed else ""
        facts.append({"name": NAMES[css], "text": text, "css": cls})
    if tol:
        facts.append({"name": "tolerance", "text": f"atol {tol:.3g}", "css": "muted"})
    chart = Chart(TITLE, Y_LABEL, [], [], [])
    chart.compact = facts
    return chart
