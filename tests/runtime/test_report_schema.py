"""The report contract (runtime/report.py): its exported JSON schema is current, and the
classes the server parses with refuse an impossible report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from runtime import report

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "report.schema.json"
REGENERATE = ("python -c \"import json; from runtime.report import json_schema; "
              "print(json.dumps(json_schema(), indent=2, sort_keys=True))\" > docs/report.schema.json")


def test_the_exported_schema_is_current():
    assert json.loads(SCHEMA.read_text()) == report.json_schema(), f"regenerate it: {REGENERATE}"


def _report(**case: object) -> dict[str, object]:
    return {"schema_version": 1, "mode": "npu",
            "submission": {"kind": "package", "name": "relu", "sha256": "0" * 64},
            "environment": {"pypto": "0.2.0", "torch": "2.13.0", "python": "3.11", "host": "h", "cann": None},
            "cases": [{"operator": "relu", "case": "c1", "verdict": "precision_fail", **case}]}


def test_a_consistent_report_round_trips():
    data = _report(metrics={"numel": 2048, "mismatch_count": 1857, "mismatch_ratio": 1857 / 2048})
    assert report.from_dict(data).to_dict()["cases"][0]["metrics"]["mismatch_count"] == 1857


@pytest.mark.parametrize(("metrics", "problem"), [
    ({"numel": 2048, "mismatch_count": 1857, "mismatch_ratio": 0.0}, "disagrees with mismatch_count/numel"),
    ({"numel": 16, "mismatch_count": 17}, "mismatch_count 17 is larger than numel 16"),
    ({"numel": -1}, "numel must be a count"),
    ({"mismatch_ratio": 1.5}, "mismatch_ratio must be between 0 and 1"),
])
def test_impossible_metrics_are_refused(metrics, problem):
    with pytest.raises(ValidationError, match=problem):
        report.from_dict(_report(metrics=metrics))


def test_the_runtime_cannot_write_an_impossible_report():
    built = report.from_dict(_report())
    built.cases[0].metrics = {"numel": 4, "mismatch_count": 5}  # set after construction
    with pytest.raises(ValidationError, match="larger than numel"):
        built.to_dict()


@pytest.mark.parametrize("metrics, problem", [
    ({"numel": 2048, "mismatch_count": 2048, "mismatch_ratio": 1.0}, "100.0% of the elements"),
    ({"numel": 2048, "mismatch_count": 0, "mismatch_ratio": 0.0, "nan_count": 3}, "3 NaN"),
    ({"numel": 2048, "mismatch_count": 0, "mismatch_ratio": 0.0, "shape_match": False}, "shape differs"),
])
def test_a_pass_its_own_numbers_contradict_is_refused(metrics, problem):
    with pytest.raises(ValidationError, match=problem):
        report.from_dict(_report(verdict="pass", metrics=metrics))
    report.from_dict(_report(verdict="precision_fail", metrics=metrics))  # the same numbers fail honestly


def test_a_case_may_not_accept_garbage_by_its_mismatch_ratio(tmp_path):
    from runtime.intake.cases import load_case_file
    from runtime.errors import SubmissionError

    path = tmp_path / "test_cases.json"
    path.write_text(json.dumps({"op_name": "op", "test_cases": [{"id": "c", "seed": 1, "compare": "ratio",
                                                                  "max_mismatch_ratio": 1.0,
                                                                  "input": {"shape": [4], "dtype": "float32"}}]}))
    with pytest.raises(SubmissionError, match="'max_mismatch_ratio' must be between 0 and 0.1"):
        load_case_file(path, "op")
