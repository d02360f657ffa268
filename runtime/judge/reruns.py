"""What a case's verdict becomes after a run the harness made for it: on the torch_npu test double, or again
without graph verify after it hit its memory limit (runtime/case_runner.py)."""
from __future__ import annotations

from runtime import verdicts
from runtime.report import CaseResult

GRAPH_MEMORY_RULE = "graph-verify-memory"  # graph verify stopped at the case's memory limit; the plain run fitted


def label_test_double(case: CaseResult) -> None:
    """A run on the torch_npu test double measured no NPU: it may not claim precision either way."""
    case.precision = "not_applicable"
    if case.verdict in ("pass", "precision_fail"):
        case.verdict_reason = (f"ran on PTO Crosscheck's torch_npu test double, not an NPU: no precision "
                               f"evidence (the double's outcome was {case.verdict})")
        case.verdict = "not_run"


def memory_of_graph_verify(plain: CaseResult, failed: CaseResult) -> CaseResult:
    """A case stopped at its memory limit with graph verify on, run again without it (docs/realops.md §10).

    When the plain run fits, the memory was graph verify's (the calculator's copy of every launch): the case
    keeps the plain run's verdict and says graph verify could not be afforded. When it does not, the case is
    the resource_limit it was.
    """
    if plain.verdict == verdicts.RESOURCE_LIMIT:
        plain.graph_verify = {"status": "unavailable", "metrics": None,
                              "reason": "the case hits its memory limit with and without graph verify"}
        return plain
    plain.graph_verify = {"status": "unavailable", "metrics": None, "rule": GRAPH_MEMORY_RULE,
                          "reason": f"graph verify needed more than the job's memory limit ({failed.verdict_reason}); "
                                    "without it the case ran, so this verdict has no graph evidence: raise --memory "
                                    "for it"}
    return plain
