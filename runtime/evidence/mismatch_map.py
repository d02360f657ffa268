"""Where a compare's mismatches are: a bounded summary stored with its metrics (docs/dashboard.md §2).

The output is read as rows × columns (rows: the product of its leading dims, columns: its last dim; a 1-D
output is one row of its flat index range), binned into at most MAX_CELLS × MAX_CELLS cells. Each cell
keeps one digit, the share of its elements outside tolerance in ninths, rounded up (0: none, 1: at least
one, 9: all), so a map is at most about 4 KB whatever the output's size. The first FIRST_INDICES
mismatching flat indices are kept beside it.

`Accumulator` builds it from the flat chunks a compare walks in order (runtime.evidence.dumps); it imports
torch only when fed, so the CLI and the dashboard read maps without loading torch.
"""
from __future__ import annotations

from typing import Any

from runtime.report import MAP_FIRST_INDICES as FIRST_INDICES
from runtime.report import MAP_MAX_CELLS as MAX_CELLS
from runtime.report import MISMATCH_MAP as KEY
from runtime.report import map_grid as grid_of
from runtime.report import map_problem as problem

LEVELS = 9


def start_of(cell: int, cells: int, size: int) -> int:
    """The first row (or column) of a cell: element i is in cell i * cells // size."""
    return -(-cell * size // cells)


class Accumulator:
    """Counts mismatches per cell over an output's flat chunks, fed in order."""

    def __init__(self, shape: list[int]) -> None:
        self.shape = [int(d) for d in shape]
        self.rows, self.cols = grid_of(self.shape)
        self.cell_rows, self.cell_cols = min(self.rows, MAX_CELLS), min(self.cols, MAX_CELLS)
        self.counts: list[int] = [0] * (self.cell_rows * self.cell_cols)  # per cell, row by row
        self.grid: Any = None  # the counts as fed, a tensor (torch is imported only when fed)
        self.first: list[int] = []
        self.offset = 0

    def add(self, mismatched: Any) -> None:
        """A chunk's mismatch mask (a bool tensor, read flat). Dense passes over the chunk, a few per element:
        the map's cost does not grow with the number of mismatches (docs/harness-cost.md)."""
        import torch

        flat = mismatched.reshape(-1)
        n = int(flat.numel())
        if n and bool(flat.any()):
            self._first(flat)
            ones = flat.to(torch.int32)
            grid = self._whole_rows(ones) if self.cols <= n else self._within_rows(ones)
            self.grid = grid if self.grid is None else self.grid.add_(grid)
        self.offset += n

    def _first(self, flat: Any) -> None:
        """The first mismatching flat indices, looked for in growing windows (no index list of the whole chunk)."""
        at, size = 0, 4096
        while len(self.first) < FIRST_INDICES and at < flat.numel():
            found = flat[at:at + size].nonzero().reshape(-1)[: FIRST_INDICES - len(self.first)]
            self.first += [self.offset + at + int(i) for i in found]
            at, size = at + size, size * 8

    def _whole_rows(self, ones: Any) -> Any:
        """Counts per cell of a chunk at least a row long: padded to whole rows, summed per column cell, then per row cell."""
        import torch

        first_row, lead = divmod(self.offset, self.cols)
        end_row = -(-(self.offset + ones.numel()) // self.cols)
        tail = end_row * self.cols - self.offset - ones.numel()
        rows = torch.nn.functional.pad(ones, (lead, tail)).view(end_row - first_row, self.cols)
        if self.cols % self.cell_cols == 0:
            per_row = rows.view(rows.shape[0], self.cell_cols, -1).sum(-1, dtype=torch.int64)
        else:
            column_cell = torch.arange(self.cols) * self.cell_cols // self.cols
            per_row = torch.zeros(rows.shape[0], self.cell_cols, dtype=torch.int64).index_add_(1, column_cell,
                                                                                               rows.to(torch.int64))
        row_cell = torch.arange(first_row, end_row) * self.cell_rows // self.rows
        return torch.zeros(self.cell_rows, self.cell_cols, dtype=torch.int64).index_add_(0, row_cell, per_row)

    def _within_rows(self, ones: Any) -> Any:
        """Counts per cell of a chunk shorter than a row (a 1-D output, very wide rows): each row's piece binned."""
        import torch

        grid = torch.zeros(self.cell_rows, self.cell_cols, dtype=torch.int64)
        at, end = self.offset, self.offset + ones.numel()
        while at < end:
            row, col = divmod(at, self.cols)
            piece = min(end, (row + 1) * self.cols) - at
            column_cell = torch.arange(col, col + piece) * self.cell_cols // self.cols
            grid[row * self.cell_rows // self.rows].index_add_(0, column_cell,
                                                              ones[at - self.offset:at - self.offset + piece].to(torch.int64))
            at += piece
        return grid

    def skip(self, n: int) -> None:
        """A chunk with no mismatch."""
        self.offset += int(n)

    def summary(self) -> dict[str, Any] | None:
        """The stored map, or None when nothing mismatched."""
        if self.grid is not None:
            self.counts, self.grid = [a + b for a, b in zip(self.counts, self.grid.reshape(-1).tolist())], None
        if not any(self.counts):
            return None
        lines = []
        for r in range(self.cell_rows):
            height = start_of(r + 1, self.cell_rows, self.rows) - start_of(r, self.cell_rows, self.rows)
            line = ""
            for c in range(self.cell_cols):
                width = start_of(c + 1, self.cell_cols, self.cols) - start_of(c, self.cell_cols, self.cols)
                count = self.counts[r * self.cell_cols + c]
                line += str(-(-count * LEVELS // (height * width)))
            lines.append(line)
        return {"shape": self.shape, "rows": self.rows, "cols": self.cols, "cells": lines, "first": self.first}


def index(flat: int, shape: list[int]) -> tuple[int, ...]:
    """A flat (C order) index as the output's own index: (row, col) for a 2-D output."""
    out = []
    for size in reversed(shape or [flat + 1]):
        flat, i = divmod(flat, size) if size else (flat, 0)
        out.append(i)
    return tuple(reversed(out))


def first_text(summary: dict[str, Any], most: int = 8) -> str:
    """The first mismatching elements, as indices of the output: '(32, 0), (32, 1), …'."""
    shown = [index(i, summary["shape"]) for i in summary["first"][:most]]
    text = ", ".join("(" + ", ".join(str(i) for i in ix) + ")" if len(ix) > 1 else f"[{ix[0]}]" for ix in shown)
    return text + (", …" if len(summary["first"]) > most else "")


def lit(summary: dict[str, Any]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The row ranges and column ranges (first, last) of the cells holding a mismatch."""
    cells = summary["cells"]
    rows = [r for r, line in enumerate(cells) if line.strip("0")]
    cols = [c for c in range(len(cells[0])) if any(line[c] != "0" for line in cells)]
    return (_spans(rows, len(cells), summary["rows"]), _spans(cols, len(cells[0]), summary["cols"]))


def _spans(cells: list[int], count: int, size: int) -> list[tuple[int, int]]:
    """Runs of neighbouring cells as element ranges (first, last)."""
    out: list[tuple[int, int]] = []
    for cell in cells:
        first, last = start_of(cell, count, size), start_of(cell + 1, count, size) - 1
        if out and out[-1][1] + 1 == first:
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def spans_text(spans: list[tuple[int, int]], size: int, noun: tuple[str, str], most: int = 4) -> str:
    """'rows 32–39 of 40', 'row 7 of 40', 'all 64 columns'; `noun`: (singular, plural)."""
    if spans == [(0, size - 1)]:
        return f"all {size:,} {noun[1]}"
    parts = [f"{a:,}" if a == b else f"{a:,}–{b:,}" for a, b in spans[:most]]
    more = f" and {len(spans) - most} more" if len(spans) > most else ""
    word = noun[0] if len(spans) == 1 and spans[0][0] == spans[0][1] else noun[1]
    return f"{word} {', '.join(parts)}{more} of {size:,}"


def where_text(summary: dict[str, Any]) -> str:
    """Where the mismatches are, in words: 'rows 32–39 of 40 × all 64 columns' (a 1-D output: its index range)."""
    rows, cols = lit(summary)
    if len(summary["shape"]) < 2:
        return spans_text(cols, summary["cols"], ("index", "indices"))
    return f"{spans_text(rows, summary['rows'], ('row', 'rows'))} × {spans_text(cols, summary['cols'], ('column', 'columns'))}"


def deciding(case: dict[str, Any], mode: str) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
    """The maps of the compare that condemned a case (its report dict): the NPU's failed precision, or in SIM
    graph verify's failed compare (SIM's own output is leftover memory, never evidence). Returns the
    compare's name and (output name, map) pairs: one pair for one output, one per mismatching output of several."""
    if mode == "npu":
        source, key = "NPU", "metrics"
        chosen = case.get("metrics") if case.get("precision") == "fail" else None
    else:
        gv = case.get("graph_verify") or {}
        source, key = "graph verify", "graph_metrics"
        chosen = gv.get("metrics") if gv.get("status") == "fail" else None
    if not isinstance(chosen, dict):
        return None
    if isinstance(chosen.get(KEY), dict):
        found = [("", chosen[KEY])]
    else:  # several outputs: each one's own map (runtime.report.CaseResult.outputs)
        found = [(str(o.get("name", i)), (o.get(key) or {}).get(KEY)) for i, o in enumerate(case.get("outputs") or [])
                 if isinstance(o, dict) and isinstance(o.get(key), dict)]
    found = [(name, summary) for name, summary in found if isinstance(summary, dict) and not problem(summary, None)]
    return (source, found) if found else None
