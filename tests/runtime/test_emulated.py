"""Which run of an NPU-only compare the report keeps, and what it says (runtime/evidence/emulated.py).

The slow end-to-end runs are in test_example_scripts.py; these cases are the merge rules on the results
those runs produce, including the ones a small kernel does not reliably provoke.
"""
from __future__ import annotations

from runtime.evidence import emulated, rounding
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


def failed_on(dtype: str, max_abs_diff: float, golden_abs_max: float = 12.7) -> CaseResult:
    """An emulated run whose one compare failed on a kernel output of `dtype` by `max_abs_diff`."""
    case = emulated_case("fail", error="Not equal to tolerance rtol=0.003, atol=0.003")
    metrics = {"rtol": 3e-3, "atol": 3e-3, "shape_match": True, "mismatch_count": 1000, "mismatch_ratio": 0.5,
               "nan_count": 0, "inf_count": 0, "max_abs_diff": max_abs_diff, "golden_abs_max": golden_abs_max}
    graph = {"on_graph_result": True, "kernel": "ffn_kernel", "dtype": dtype}
    case.script = {"asserts": [{"index": 0, "graph": graph, "metrics": metrics}]}
    return case


def test_a_bf16_compare_failing_by_one_unit_in_the_last_place_is_inconclusive_not_a_defect():
    # bf16 values near 12.7 are 0.0625 apart: a compare at rtol=3e-3 cannot tell one rounding path from another.
    case = emulated.merge(sim_case(), failed_on("bfloat16", 0.0625))
    assert case.verdict == "sim_output_unwritten" and case.graph_verify["status"] == "no_compare"
    why = case.graph_verify["emulated_npu_branch"]
    assert why["status"] == "inconclusive" and why["verdict"] == "graph_fail"
    assert why["rounding"]["asserts"][0]["ulp"] == 0.0625
    assert "cannot decide the compare" in why["reason"] and "bfloat16" in why["reason"]


def test_a_bf16_compare_failing_by_more_than_rounding_stays_a_graph_fail():
    case = emulated.merge(sim_case(), failed_on("bfloat16", 0.5))
    assert case.verdict == "graph_fail" and case.graph_verify["source"] == "emulated_npu_branch"


def test_an_fp32_compare_failing_by_a_hair_stays_a_graph_fail():
    # fp32 rounding is far below such a tolerance: the failure is the graph's maths.
    case = emulated.merge(sim_case(), failed_on("float32", 0.0625))
    assert case.verdict == "graph_fail"


def test_a_low_precision_failure_with_nan_is_never_put_down_to_rounding():
    failed = failed_on("float16", 0.001)
    failed.script["asserts"][0]["metrics"]["nan_count"] = 3
    assert emulated.merge(sim_case(), failed).verdict == "graph_fail"


def test_the_spacing_of_low_precision_values():
    assert rounding.ulp(1.0, "bfloat16") == 2 ** -7
    assert rounding.ulp(12.7, "bfloat16") == 0.0625
    assert rounding.ulp(3.0, "float16") == 2 ** -9
