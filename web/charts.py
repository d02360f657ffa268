"""Chart geometry for server-rendered SVG (the templates in web/templates/_charts.html draw it).

Why server-rendered SVG and not a JavaScript charting library such as plotly.js:
- the pages must be readable without JavaScript, and an SVG chart is part of the HTML;
- plotly.min.js is about 4.6 MB, parsed on every operator page, which hurts at 390 px on a phone
  and would dominate the 200 ms page budget of a cold browser;
- the charts we need are three simple ones (a log-scale line chart with a tolerance line, a
  linear trend, per-core task lanes), computed here in a few dozen lines, testable by parsing HTML;
- native SVG <title> elements give per-point tooltips, and a <details> data table beside each
  chart gives screen readers and keyboard users the same numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

WIDTH, HEIGHT = 760, 320  # the history chart and the lanes, in CSS pixels at their natural size
SMALL_WIDTH, SMALL_HEIGHT = 520, 200  # the cost trends, two side by side
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 14, 34
ZERO_FLOOR_DECADES = 2  # an exact 0 is drawn this many decades under the smallest non-zero value
MAX_LANE_BARS = 4000  # beyond this the timeline shows the first bars and says so


@dataclass
class Series:
    name: str
    css: str  # class suffix: sim | graph | npu | cost | util
    points: list[dict[str, Any]] = field(default_factory=list)  # x, y, title, marker

    @property
    def path(self) -> str:
        return " ".join(f"{p['x']:.1f},{p['y']:.1f}" for p in self.points)

    @property
    def circles(self) -> Markup:
        """The points as SVG circles with their tooltips, built here in one pass: an operator page holds
        thousands of them (the per-case charts) and a template loop over each costs tens of ms."""
        r = 4 if len(self.points) < 60 else 2.5
        return Markup("".join(
            f'<circle cx="{p["x"]:.1f}" cy="{p["y"]:.1f}" r="{r}"'
            + (f' class="{escape(p["marker"])}"' if p["marker"] else "")
            + f"><title>{escape(p['title'])}</title></circle>" for p in self.points))


@dataclass
class Chart:
    title: str
    y_label: str
    series: list[Series]
    y_ticks: list[dict[str, Any]]
    x_ticks: list[dict[str, Any]]
    tolerance: dict[str, Any] | None = None
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    plot_w: int = WIDTH - LEFT - RIGHT
    plot_h: int = HEIGHT - TOP - BOTTOM
    empty: bool = False
    notes: list[str] = field(default_factory=list)
    band: dict[str, Any] | None = None  # web.diff_chart: the clamped garbage band at the top
    compact: list[dict[str, Any]] | None = None  # one run: its numbers as a small figure


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _x_positions(n: int, width: int = WIDTH) -> list[float]:
    plot_w = width - LEFT - RIGHT
    if n <= 1:
        return [LEFT + plot_w / 2] * n
    return [LEFT + plot_w * i / (n - 1) for i in range(n)]


def _x_ticks(runs: list[dict[str, Any]], xs: list[float], most: int = 8) -> list[dict[str, Any]]:
    step = max(1, math.ceil(len(runs) / most))
    return [{"x": xs[i], "label": f"#{runs[i]['job_id']}"} for i in range(0, len(runs), step)]


def linear_trend(points: list[dict[str, Any]], key: str, name: str, css: str, unit: str,
                 scale: float = 1.0) -> Chart:
    """One value per SIM run on a linear scale (AICore µs, utilisation)."""
    runs = sorted((p for p in points if p["mode"] == "sim" and _finite(p.get(key))), key=lambda p: p["job_id"])
    if not runs:
        return Chart(name, unit, [], [], [], empty=True)
    values = [p[key] * scale for p in runs]
    if len(runs) == 1:  # one run: a number, not an empty chart
        chart = Chart(name, unit, [], [], [], width=SMALL_WIDTH, height=SMALL_HEIGHT)
        chart.compact = [{"name": name, "text": f"{plain(values[0])} {unit}", "css": ""}]
        return chart
    hi = _nice(max(values)) or 1.0
    plot_h = SMALL_HEIGHT - TOP - BOTTOM
    xs = _x_positions(len(runs), SMALL_WIDTH)
    s = Series(name, css, [{"x": x, "y": TOP + plot_h * (1 - v / hi), "marker": "",
                            "title": f"{name} · job #{p['job_id']} · {plain(v)} {unit}"}
                           for x, v, p in zip(xs, values, runs)])
    y_ticks = [{"y": TOP + plot_h * (1 - i / 4), "label": plain(hi * i / 4)} for i in range(5)]
    return Chart(name, unit, [s], y_ticks, _x_ticks(runs, xs, most=5), width=SMALL_WIDTH, height=SMALL_HEIGHT,
                 plot_w=SMALL_WIDTH - LEFT - RIGHT, plot_h=plot_h)


def plain(x: float) -> str:
    """A linear value without an exponent where one is not needed: 1,234 µs, not 1.23e+03 µs."""
    if 100 <= abs(x) < 1e9:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _nice(x: float) -> float:
    """The smallest 1/2/5 x 10^k at or above x."""
    if x <= 0:
        return 0.0
    exp = 10 ** math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if x <= m * exp:
            return m * exp
    return 10 * exp


@dataclass
class Timeline:
    lanes: list[dict[str, Any]]
    span_us: float
    ticks: list[dict[str, Any]]
    width: int
    height: int
    left: int
    plot_w: int
    lane_h: int
    shown: int
    total: int


def lanes_timeline(lanes: list[dict[str, Any]]) -> Timeline | None:
    """Per-core task bars from lanes.json: [{core, type AIC|AIV, tasks: [[start_us, end_us, taskId]]}]."""
    rows = [lane for lane in lanes if isinstance(lane, dict) and lane.get("tasks")]
    rows.sort(key=lambda lane: (lane.get("type") != "AIC", _core_index(lane.get("core", ""))))
    spans = [(t[0], t[1]) for lane in rows for t in lane["tasks"] if len(t) >= 2 and _finite(t[0]) and _finite(t[1])]
    if not spans:
        return None
    t0, t1 = min(s for s, _ in spans), max(e for _, e in spans)
    span = max(t1 - t0, 1e-9)
    left, width, lane_h = 70, WIDTH, 18
    plot_w = width - left - 40  # room for the last tick's label
    total, shown, out = len(spans), 0, []
    for i, lane in enumerate(rows):
        bars = []
        for task in lane["tasks"]:
            if shown >= MAX_LANE_BARS or len(task) < 2 or not (_finite(task[0]) and _finite(task[1])):
                continue
            start, end = task[0], task[1]
            x = left + plot_w * (start - t0) / span
            w = max(plot_w * (end - start) / span, 1.0)
            tid = task[2] if len(task) > 2 else "?"
            bars.append({"x": x, "w": w, "title": f"{lane.get('core')} · task {tid} · "
                                                  f"{start - t0:.3g}–{end - t0:.3g} µs ({end - start:.3g} µs)"})
            shown += 1
        out.append({"core": str(lane.get("core", "?")), "type": lane.get("type", ""), "y": 6 + i * lane_h,
                    "bars": bars})
    height = 6 + len(out) * lane_h + 26
    ticks = [{"x": left + plot_w * i / 4, "label": f"{span * i / 4:.3g}"} for i in range(5)]
    return Timeline(out, span, ticks, width, height, left, plot_w, lane_h, shown, total)


def _core_index(core: str) -> int:
    tail = core.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0
