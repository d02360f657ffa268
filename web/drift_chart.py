"""The operator page's drift trends: for each drifting case (server/services/drift.py), its max |diff|
over the suite's recent runs on a log scale, with the tolerance (atol + rtol * max |golden|) as a line."""
from __future__ import annotations

import math
from typing import Any

from sqlalchemy.orm import Session

from server.services import drift
from web.charts import BOTTOM, LEFT, RIGHT, SMALL_HEIGHT, SMALL_WIDTH, TOP, Chart, Series, _finite, _x_positions

RUNS = 20  # suite runs drawn per drifting case
SHOWN = 12  # drifting cases drawn; the rest are listed on the suite run page
NAMES = {"sim": ("graph verify", "graph"), "npu": ("NPU", "npu")}


def for_operator(session: Session, operator: str) -> list[dict[str, Any]]:
    out = []
    for run, d in drift.drifting_of(session, operator)[:SHOWN]:
        points = drift.trend(session, run, (operator, d["case"], d["mode"]), RUNS)
        out.append({"suite": run.name, "run_id": run.id, "case": d["case"], "mode": d["mode"], "why": d["why"],
                    "chart": build(points, d["mode"])})
    return out


def build(points: list[dict[str, Any]], mode: str) -> Chart:
    name, css = NAMES.get(mode, NAMES["sim"])
    title, y_label = f"{name} max |diff| per suite run", "max |diff| (log)"
    values = [p["value"] for p in points if _finite(p["value"])]
    tol = next((p["allowance"] for p in reversed(points) if _finite(p["allowance"])), None)
    positive = [v for v in values if v > 0] + ([tol] if tol else [])
    if not values or not positive:
        return Chart(title, y_label, [], [], [], empty=True)
    lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    lo -= 1 if 0 in values else 0  # an exact 0 sits on the bottom decade
    hi = max(hi, lo + 1)
    plot_w, plot_h = SMALL_WIDTH - LEFT - RIGHT, SMALL_HEIGHT - TOP - BOTTOM

    def y_of(v: float) -> float:
        return TOP + plot_h * (hi - (math.log10(v) if v > 0 else lo)) / (hi - lo)

    drawn = [p for p in points if _finite(p["value"])]
    xs = _x_positions(len(drawn), SMALL_WIDTH)
    series = Series(name, css, [{"x": x, "y": y_of(p["value"]), "marker": "", "title": _title(p)}
                                for x, p in zip(xs, drawn)])
    step = max(1, math.ceil((hi - lo) / 4))
    y_ticks = [{"y": y_of(10.0 ** d), "label": f"1e{d}"} for d in range(lo, hi + 1, step)]
    every = max(1, math.ceil(len(drawn) / 5))
    x_ticks = [{"x": xs[i], "label": f"#{drawn[i]['run_id']}"} for i in range(0, len(drawn), every)]
    tolerance = {"y": y_of(tol), "label": f"allowed {tol:.3g}"} if tol else None
    return Chart(title, y_label, [series], y_ticks, x_ticks, tolerance, width=SMALL_WIDTH, height=SMALL_HEIGHT,
                 plot_w=plot_w, plot_h=plot_h)


def _title(p: dict[str, Any]) -> str:
    used = f" ({p['value'] / p['allowance']:.0%} of tolerance)" if _finite(p["allowance"]) and p["allowance"] else ""
    commit = f" · {p['commit'][:10]}" if p.get("commit") else ""
    return f"suite run #{p['run_id']}{commit} · max |diff| {p['value']:.3g}{used}"
