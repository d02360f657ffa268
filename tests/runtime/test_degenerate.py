"""Which compares cannot tell a correct kernel from garbage (runtime.judge.degenerate), on real metrics."""
from __future__ import annotations

import torch

from runtime.evidence import metrics
from runtime.judge import degenerate

TOL = (1e-3, 1e-3)


def why(golden: torch.Tensor) -> str:
    return degenerate.reason(metrics.compare(golden.clone(), golden, *TOL))


def test_a_golden_zeros_match_is_degenerate():
    assert "all zero" in why(torch.zeros(4, 8))
    assert "within atol" in why(torch.full((4, 8), 5e-4))


def test_one_value_everywhere_is_degenerate():
    softmax_over_one_key = torch.softmax(torch.randn(2, 4, 8, 1), dim=-1)
    assert "1 in all 64 elements" in why(softmax_over_one_key)
    assert "one element equal to 1" in why(torch.ones(1, 1))


def test_a_golden_that_varies_or_one_real_value_is_not():
    assert why(torch.randn(4, 8)) == ""
    assert why(torch.tensor([3.7])) == ""
    assert why(torch.tensor([0.0, 1.0])) == ""


def test_a_shape_mismatch_or_a_chunked_recheck():
    g = torch.ones(6, 5)
    assert degenerate.reason(metrics.compare(torch.ones(5, 6), g, *TOL)) == ""
    parts = [metrics.compare(g[:3], g[:3], *TOL), metrics.compare(g[3:], g[3:], *TOL)]
    merged = metrics.combine(parts)
    assert merged["golden_min"] == merged["golden_max"] == 1.0
    assert degenerate.reason({**merged, "shape_match": True}) != ""


def test_a_script_is_degenerate_only_when_every_compare_is():
    ones, varied = torch.ones(8), torch.randn(8)
    flat = {"metrics": metrics.compare(ones, ones, *TOL)}
    real = {"metrics": metrics.compare(varied, varied, *TOL)}
    scalar = {"metrics": {"kind": "scalar_compare", "value": 1.0}}
    assert degenerate.of_asserts([flat, scalar]) != ""
    assert degenerate.of_asserts([flat, real]) == ""
    assert degenerate.of_asserts([scalar]) == ""
