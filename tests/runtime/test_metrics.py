"""Diff magnitudes are kept even for garbage; tolerance follows allclose."""
import math

import torch

from runtime.evidence import metrics
from runtime.judge.tolerance import within_tolerance


def test_close_within_tolerance():
    g = torch.linspace(-1, 1, 100)
    m = metrics.compare(g + 1e-5, g, 1e-3, 1e-3)
    assert m["shape_match"] and m["mismatch_count"] == 0 and within_tolerance(m)
    assert 0 < m["max_abs_diff"] < 2e-5 and not m["bit_identical"]


def test_garbage_magnitudes_and_nans_are_counted():
    g = torch.ones(4, 4)
    out = torch.full((4, 4), 9e30)
    out[0, 0] = float("nan")
    out[0, 1] = float("inf")
    m = metrics.compare(out, g, 1e-3, 1e-3)
    assert m["nan_count"] == 1 and m["inf_count"] == 1
    assert m["max_abs_diff"] > 1e30 and m["output_abs_max"] > 1e30 and m["mismatch_count"] == 16
    assert not within_tolerance(m) and not within_tolerance(m, "ratio", 0.5)
    assert all(v is None or math.isfinite(v) for v in m.values() if isinstance(v, float))


def test_shape_mismatch():
    m = metrics.compare(torch.zeros(2, 3), torch.zeros(3, 2), 1e-3, 1e-3)
    assert not m["shape_match"] and m["max_abs_diff"] is None and m["mismatch_ratio"] == 1.0


def test_ratio_mode_allows_a_few_outliers():
    g = torch.zeros(1000)
    out = g.clone()
    out[:3] = 1.0
    m = metrics.compare(out, g, 1e-3, 1e-3)
    assert not within_tolerance(m) and within_tolerance(m, "ratio", 0.005)


def test_bit_identical_and_combine():
    g = torch.randn(8)
    a = metrics.compare(g.clone(), g, 1e-3, 1e-3)
    b = metrics.compare(g + 1, g, 1e-3, 1e-3)
    assert a["bit_identical"] and a["max_abs_diff"] == 0.0
    both = metrics.combine([a, b])
    assert both["max_abs_diff"] == b["max_abs_diff"] and both["mismatch_count"] == 8 and len(both["outputs"]) == 2
