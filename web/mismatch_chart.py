"""The job page's mismatch map: where a failed compare's mismatches are, drawn from its stored summary
(runtime.evidence.mismatch_map) as server-rendered SVG, like the other charts (web/charts.py says why SVG).

A cell is a block of the output's rows × columns (a 1-D output: a range of its flat indices); it is drawn
only when at least one of its elements is outside tolerance, darker the larger that share (docs/dashboard.md §2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from runtime.evidence import mismatch_map

PLOT_W, MAX_PLOT_H, MIN_PLOT_H = 512, 240, 24
LABEL_GAP = 14  # labels closer than this (chart pixels) to one already placed are left out
MAX_SPAN_LABELS = 3  # lit spans whose first and last row (column) are labelled
LEFT, RIGHT, TOP, BOTTOM = 52, 10, 14, 34


@dataclass
class MismatchMap:
    source: str  # the compare: graph verify | NPU
    output: str  # the output's name when the case has several, else ""
    where: str  # runtime.evidence.mismatch_map.where_text
    first: str  # runtime.evidence.mismatch_map.first_text
    cell: str  # what one cell covers, in words
    width: float
    height: float
    plot_w: float
    plot_h: float
    rects: Markup
    row_labels: list[dict[str, Any]]
    col_labels: list[dict[str, Any]]
    flat: bool  # a 1-D output: one row of flat indices
    left: int = LEFT
    top: int = TOP


def build(report: dict[str, Any], mode: str) -> list[MismatchMap]:
    """The maps of a case's condemning compare (runtime.evidence.mismatch_map.deciding), none when it passed or has none."""
    found = mismatch_map.deciding(report, mode)
    if found is None:
        return []
    source, maps = found
    return [_one(source, name, summary) for name, summary in maps]


def _one(source: str, name: str, summary: dict[str, Any]) -> MismatchMap:
    cells = summary["cells"]
    n_rows, n_cols, rows, cols = len(cells), len(cells[0]), summary["rows"], summary["cols"]
    cell_w = PLOT_W / n_cols
    cell_h = max(min(cell_w, MAX_PLOT_H / n_rows), MIN_PLOT_H / n_rows)
    plot_h = cell_h * n_rows
    parts = []
    for r, line in enumerate(cells):
        r0, r1 = mismatch_map.start_of(r, n_rows, rows), mismatch_map.start_of(r + 1, n_rows, rows) - 1
        c = 0
        while c < n_cols:  # a run of equal cells is one rect: a lit row of 64 cells is one element, not 64
            level, end = line[c], c
            while end + 1 < n_cols and line[end + 1] == level:
                end += 1
            if level != "0":
                c0, c1 = mismatch_map.start_of(c, n_cols, cols), mismatch_map.start_of(end + 1, n_cols, cols) - 1
                where = f"flat indices {_span(c0, c1)}" if rows == 1 else f"rows {_span(r0, r1)} × columns {_span(c0, c1)}"
                share = _share(int(level))
                parts.append(f'<rect class="lv{level}" x="{LEFT + c * cell_w:.1f}" y="{TOP + r * cell_h:.1f}" '
                             f'width="{(end - c + 1) * cell_w:.1f}" height="{cell_h:.1f}">'
                             f"<title>{escape(where)}: {share} of the elements outside tolerance</title></rect>")
            c = end + 1
    flat = len(summary["shape"]) < 2
    lit_rows, lit_cols = mismatch_map.lit(summary)
    row_labels = [] if flat else [{"y": y + 4, "label": f"{n:,}"} for y, n in _labels(
        lit_rows, rows, n_rows, lambda cell, end: TOP + (cell + end) * cell_h)]
    col_labels = [{"x": x, "label": f"{n:,}"} for x, n in _labels(
        lit_cols, cols, n_cols, lambda cell, end: LEFT + (cell + end) * cell_w)]
    return MismatchMap(source=source, output=name, where=mismatch_map.where_text(summary),
                       first=mismatch_map.first_text(summary), cell=_cell_text(n_rows, n_cols, rows, cols, flat),
                       width=LEFT + PLOT_W + RIGHT, height=TOP + plot_h + BOTTOM, plot_w=PLOT_W, plot_h=plot_h,
                       rects=Markup("".join(parts)), row_labels=row_labels, col_labels=col_labels, flat=flat)


def _labels(spans: list[tuple[int, int]], size: int, cells: int, at: Any) -> list[tuple[float, int]]:
    """Where to label an axis: its ends, then the first and last row (column) of the first lit spans, each
    at its cell's edge (`at(cell, 0)` the start, `at(cell, 1)` the end); none crowding another."""
    def cell_of(i: int) -> int:
        return i * cells // size

    wanted = [(at(0, 0), 0), (at(cells - 1, 1), size - 1)]
    for first, last in spans[:MAX_SPAN_LABELS]:
        wanted += [(at(cell_of(first), 0), first), (at(cell_of(last), 1), last)]
    placed: list[tuple[float, int]] = []
    for pos, n in wanted:
        if all(abs(pos - p) >= LABEL_GAP and n != m for p, m in placed):
            placed.append((pos, n))
    return sorted(placed)


def _span(a: int, b: int) -> str:
    return f"{a:,}" if a == b else f"{a:,}–{b:,}"


def _share(level: int) -> str:
    """A cell's digit as the share it stands for: more than (level-1)/9, at most level/9."""
    if level == mismatch_map.LEVELS:
        return "more than 89 %"
    if level == 1:
        return "up to 11 %"
    return f"{(level - 1) / mismatch_map.LEVELS:.0%}–{level / mismatch_map.LEVELS:.0%}".replace("%", " %")


def _cell_text(n_rows: int, n_cols: int, rows: int, cols: int, flat: bool) -> str:
    if flat:
        per = -(-cols // n_cols)
        return "one element" if per == 1 else f"up to {per:,} consecutive elements"
    per_r, per_c = -(-rows // n_rows), -(-cols // n_cols)
    if per_r == per_c == 1:
        return "one element"
    return f"up to {per_r:,} row{'s' if per_r > 1 else ''} × {per_c:,} column{'s' if per_c > 1 else ''}"
