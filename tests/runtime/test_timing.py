"""The timing loop and its summary (runtime/job/timing.py): warmup, repeats, synchronize, median and spread."""
from __future__ import annotations

import pytest

from runtime.job import timing
from runtime.intake.cases import load_case_file
from runtime.errors import SubmissionError


def test_each_sample_is_bracketed_by_synchronize_after_the_warmup() -> None:
    log: list[str] = []
    ticks = iter(range(100))
    result = timing.measure(lambda: log.append("call"), lambda: log.append("sync"), timing.TimingSpec(2, 3),
                            clock=lambda: float(next(ticks)) / 1e6)
    assert log == ["call", "sync"] * 2 + ["sync", "call", "sync"] * 3
    assert result["warmup"] == 2 and result["repeats"] == 3
    assert result["median_us"] == result["min_us"] == result["max_us"] == 1.0  # one tick per sample


def test_summary_reports_median_quartiles_extremes_and_spread() -> None:
    s = timing.summarize([10e-6, 11e-6, 12e-6, 13e-6, 100e-6])
    assert (s["median_us"], s["q1_us"], s["q3_us"], s["min_us"], s["max_us"]) == (12.0, 11.0, 13.0, 10.0, 100.0)
    assert s["spread"] == round(2 / 12, 4)  # an outlier moves the max, not the median or the IQR
    assert timing.summarize([5e-6])["spread"] == 0.0
    with pytest.raises(ValueError):
        timing.summarize([])


@pytest.mark.parametrize(("raw", "spec"), [(None, None), (False, None), (True, timing.TimingSpec()),
                                           ({"repeats": 50}, timing.TimingSpec(timing.DEFAULT_WARMUP, 50)),
                                           ({"warmup": 0, "repeats": 1}, timing.TimingSpec(0, 1))])
def test_a_case_asks_for_timing(raw, spec) -> None:
    assert timing.parse_spec("case", raw) == spec


@pytest.mark.parametrize("raw", [{"repeats": 0}, {"repeats": "10"}, {"warmup": -1}, {"repeat": 3}, 3, "yes",
                                 {"repeats": timing.MAX_REPEATS + 1}])
def test_bad_timing_is_refused_naming_the_case(raw) -> None:
    with pytest.raises(SubmissionError, match="case: "):
        timing.parse_spec("case", raw)


def test_test_cases_json_carries_timing(tmp_path) -> None:
    path = tmp_path / "test_cases.json"
    path.write_text('{"op_name": "x", "test_cases": [{"id": "a", "input": {"shape": [4], "dtype": "fp32"},'
                    ' "timing": {"warmup": 1, "repeats": 5}}, {"id": "b", "input": {"shape": [4]}}]}')
    cases = load_case_file(path, "x").cases
    assert cases[0].timing == timing.TimingSpec(1, 5) and cases[1].timing is None
