"""The mismatch map (runtime.evidence.mismatch_map): where a failed compare's mismatches are, stored bounded with its metrics,
read back by the CLI and the job page (docs/dashboard.md §2)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pydantic
import pytest
import torch
from rich.console import Console

from runtime.evidence import mismatch_map
from runtime.cli import console
from runtime.evidence import metrics
from runtime.report import from_dict

DATA = Path(__file__).resolve().parents[1] / "web" / "data"


def _tiling_bug() -> dict:
    """A real `crosscheck run examples/tiling_bug` (M = 40: the loop covers 32 rows)."""
    return json.loads((DATA / "tiling_bug.sim.json").read_text())


def test_the_tiling_bugs_stored_map_lights_exactly_its_last_eight_rows() -> None:
    case = _tiling_bug()["cases"][0]
    summary = case["graph_verify"]["metrics"][mismatch_map.KEY]
    assert mismatch_map.problem(summary, 40 * 64) is None
    lit = [r for r, line in enumerate(summary["cells"]) if line.strip("0")]
    assert lit == list(range(32, 40))
    assert mismatch_map.lit(summary) == ([(32, 39)], [(0, 63)])
    assert mismatch_map.where_text(summary) == "rows 32–39 of 40 × all 64 columns"
    assert mismatch_map.first_text(summary, most=2) == "(32, 0), (32, 1), …"
    source, maps = mismatch_map.deciding(case, "sim")
    assert source == "graph verify" and maps == [("", summary)]
    assert mismatch_map.KEY not in case["metrics"]  # SIM's leftover bytes are no evidence: never mapped


def _chunked(out: torch.Tensor, gold: torch.Tensor, size: int) -> dict:
    where = mismatch_map.Accumulator(list(out.shape))
    flat_o, flat_g = out.reshape(-1), gold.reshape(-1)
    for i in range(0, flat_o.numel(), size):
        metrics.compare(flat_o[i:i + size], flat_g[i:i + size], 1e-3, 1e-3, where)
    return where.summary()


def test_chunks_give_the_map_of_the_whole_and_big_outputs_stay_bounded() -> None:
    gold = torch.randn(300, 130) + 5
    out = gold.clone()
    out[299, 129] = 0  # one element of the last cell's 4 rows × 2 columns: 1/8, shade 2 of 9
    out[10:20, 40:45] = float("nan")
    whole = _chunked(out, gold, out.numel())
    assert _chunked(out, gold, 997) == whole
    assert len(whole["cells"]) == 64 and {len(line) for line in whole["cells"]} == {64}
    assert whole["cells"][-1] == "0" * 63 + "2" and whole["first"][0] == 10 * 130 + 40
    assert mismatch_map.index(whole["first"][-1], [300, 130]) == (13, 40)  # 16 kept: rows 10-12's five, then row 13
    assert len(json.dumps(whole)) < 5000
    assert _chunked(gold, gold, 1000) is None


def test_a_1d_output_is_its_flat_index_range_binned() -> None:
    gold = torch.ones(1000)
    out = gold.clone()
    out[900:] = 2
    summary = _chunked(out, gold, 1000)
    assert len(summary["cells"]) == 1 and summary["cells"][0] == "0" * 57 + "4" + "9" * 6  # 7 of cell 57's 16
    assert mismatch_map.where_text(summary) == "indices 891–999 of 1,000"  # cell-wide: cells hold 15 or 16 indices
    assert mismatch_map.first_text(summary, most=1) == "[900], …"


def test_a_report_refuses_an_unbounded_or_baseless_map() -> None:
    report = _tiling_bug()
    case = report["cases"][0]
    summary = case["graph_verify"]["metrics"][mismatch_map.KEY]
    for bad in ({**summary, "cells": summary["cells"] * 2}, {**summary, "first": list(range(17))},
                {**summary, "shape": [40, 65]}):
        case["outputs"][0]["graph_metrics"][mismatch_map.KEY] = bad
        with pytest.raises(pydantic.ValidationError, match=mismatch_map.KEY):
            from_dict(report)
    case["outputs"][0]["graph_metrics"][mismatch_map.KEY] = summary
    case["graph_verify"]["metrics"][mismatch_map.KEY] = {**summary, "cells": ["9" * 64] * 4000}
    with pytest.raises(pydantic.ValidationError, match="graph_verify"):
        from_dict(report)
    case["graph_verify"]["metrics"][mismatch_map.KEY] = summary
    case["metrics"][mismatch_map.KEY] = summary
    case["metrics"]["mismatch_count"], case["metrics"]["mismatch_ratio"] = 0, 0.0
    with pytest.raises(pydantic.ValidationError, match="without mismatches"):
        from_dict(report)


def test_the_cli_prints_where_and_the_first_indices_and_names_keep() -> None:
    out = io.StringIO()
    console.print_report(from_dict(_tiling_bug()), Console(file=out, width=80, color_system=None))
    text = " ".join(out.getvalue().split())  # wrapped at 80 columns
    assert "tiling_bug_m40 (graph verify): rows 32–39 of 40 × all 64 columns; first at (32, 0), (32, 1)," in text
    assert "verify_result_brief.csv: in each case's job dir" in text and "crosscheck run --keep" in text


def _by_definition(mask: torch.Tensor, shape: list[int]) -> dict | None:
    """The map from every mismatching index's own cell: element i of row r, column c is in cell
    (r * cell_rows // rows, c * cell_cols // cols)."""
    where = mismatch_map.Accumulator(shape)
    at = mask.nonzero().reshape(-1)
    cell = (at // where.cols) * where.cell_rows // where.rows * where.cell_cols + (at % where.cols) * where.cell_cols // where.cols
    where.counts, where.first = cell.bincount(minlength=len(where.counts)).tolist(), at[:16].tolist()
    return where.summary()


@pytest.mark.parametrize("shape", [[40, 64], [300, 130], [1000], [7, 5000], [3, 4, 17], [129, 65], [5, 1], [100_000]])
def test_the_dense_count_is_the_maps_definition_for_any_chunking(shape: list[int]) -> None:
    numel = int(torch.tensor(shape).prod())
    generator = torch.Generator().manual_seed(numel)
    for share in (0.001, 0.3, 1.0):
        mask = torch.rand(numel, generator=generator) < share
        for chunk in (numel, 997, 331):  # 331: shorter than a row of [7, 5000], [1000], [100_000]
            where = mismatch_map.Accumulator(shape)
            for i in range(0, numel, chunk):
                where.add(mask[i:i + chunk])
            assert where.summary() == _by_definition(mask, shape), (share, chunk)
