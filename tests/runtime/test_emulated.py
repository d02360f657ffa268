"""Which run of an NPU-only compare the report keeps, and what it says (runtime/evidence/emulated.py).

The slow end-to-end runs are in test_example_scripts.py; these cases are the merge rules on the results
those runs produce, including the ones a small kernel does not reliably provoke.
"""
from __future__ import annotations

from runtime.evidence import emulated
from runtime.report import CaseResult, ErrorInfo, Launch


def sim_case() -> CaseResult:
    return CaseResult(operator="ex", case="grp::one", structural="ok", kernel_launches=1,
                      verdict="sim_output_unwritten", verdict_reason="SIM ran the kernels",
                      graph_verify={"status": "no_compare", "reason": "no assert of the script compared a kernel's output"})


def emulated_case(status: str, unwritten: bool = False, error: str = "") -> CaseResult:
    graph = {"on_graph_result": not unwritten, "unwritten_output": unwritten, "kernel": "loop_kernel"}
    return CaseResult(
        operator="ex", case="grp::one", structural="error" if status == "fail" else "ok", kernel_launches=1,
        verdict="graph_fail" if status == "fail" else "sim_garbage_graph_ok", verdict_reason="the script's own check",
        graph_verify={"status": status, "metrics": {"rtol": 1e-3}}, error=ErrorInfo("AssertionError", error) if error else None,
        script={"asserts": [{"index": 0, "graph": graph}]},
        launches=[Launch(kernel="loop_kernel", output_written=[False, not unwritten], arg_shapes=[[3], [3]])])


def test_a_judged_graph_result_is_kept_and_labelled_as_graph_evidence_not_npu():
    case = emulated.merge(sim_case(), emulated_case("pass"))
    assert case.verdict == "sim_garbage_graph_ok"
    assert case.graph_verify["source"] == "emulated_npu_branch"
    assert case.graph_verify["sim_run"] == {"verdict": "sim_output_unwritten", "graph_verify": "no_compare"}
    assert "not an NPU result" in case.verdict_reason


def test_a_compare_that_read_an_output_the_calculator_never_wrote_judged_nothing():
    # The loop-carried `out.move(y)` of symbolic_scalar.py's loop example: no graph value reached the output.
    case = emulated.merge(sim_case(), emulated_case("fail", unwritten=True, error="Not equal to tolerance"))
    assert case.verdict == "sim_output_unwritten" and case.graph_verify["status"] == "no_compare"
    why = case.graph_verify["emulated_npu_branch"]
    assert why["status"] == "unavailable" and why["verdict"] == "graph_fail"
    assert "calculator wrote no output for loop_kernel" in why["reason"]


def test_a_failed_npu_branch_keeps_the_sim_verdict_and_says_why():
    failed = emulated_case("unavailable", error="module 'torch.npu' has no attribute 'NPUGraph'")
    failed.verdict, failed.structural = "structural_error", "error"
    case = emulated.merge(sim_case(), failed)
    assert case.verdict == "sim_output_unwritten"
    assert "NPUGraph" in case.graph_verify["emulated_npu_branch"]["reason"]
    assert "gave none" in case.graph_verify["reason"]
