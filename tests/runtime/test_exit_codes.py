"""The exit codes of `crosscheck run` / `submit`: 0 acceptable, 1 kernel defect, 2 unusable input,
3 infrastructure or no capable worker, with the words that say what happened."""
from __future__ import annotations

import pytest

from runtime import exit_codes as ec
from runtime import vocabulary


@pytest.mark.parametrize(("verdict", "mode", "stage", "code"), [
    ("sim_garbage_graph_ok", "sim", "compare", ec.OK),
    ("sim_output_unwritten", "sim", "compare", ec.OK),
    ("pass", "npu", "compare", ec.OK),
    ("graph_fail", "sim", "compare", ec.KERNEL_DEFECT),
    ("precision_fail", "npu", "compare", ec.KERNEL_DEFECT),
    ("suspect_fake_pass", "sim", "compare", ec.KERNEL_DEFECT),
    ("structural_error", "sim", "sim", ec.KERNEL_DEFECT),
    ("not_run", "sim", "golden", ec.UNUSABLE),  # the golden failed: the submission's, not the kernel's
    ("not_run", "npu", "device", ec.INFRA),  # the card could not be set up: ours
    ("pass", "sim", "compare", ec.KERNEL_DEFECT),  # a SIM "pass" is not acceptable for SIM
    ("version_skew", "sim", "sim", ec.UNUSABLE),  # written for another pypto: not the kernel's defect
    ("resource_limit", "sim", "sim", ec.INFRA),  # our limit stopped it: raise it, nothing known of the kernel
    ("sim_unsupported", "sim", "sim", ec.INFRA),  # this host's SIM cannot simulate it: no capable host here
    ("not_run", "sim", "environment", ec.INFRA),  # this host's Python lacks a package the test imports
    ("not_run", "sim", "sim", ec.KERNEL_DEFECT),  # a script that failed before any kernel ran
])
def test_each_case_gets_its_code(verdict: str, mode: str, stage: str, code: int) -> None:
    assert ec.of_case(verdict, mode, stage) == code


def test_a_defect_wins_then_unusable_then_infrastructure() -> None:
    assert ec.combine([ec.OK, ec.INFRA, ec.KERNEL_DEFECT, ec.UNUSABLE]) == ec.KERNEL_DEFECT
    assert ec.combine([ec.OK, ec.INFRA, ec.UNUSABLE]) == ec.UNUSABLE
    assert ec.combine([ec.OK, ec.INFRA]) == ec.INFRA
    assert ec.combine([ec.OK, ec.OK]) == ec.OK
    assert ec.combine([]) == ec.UNUSABLE  # nothing judged is never 0


def test_the_words_say_what_happened_not_just_failed() -> None:
    cases = [{"verdict": "graph_fail", "stage": "compare"}, {"verdict": "graph_fail", "stage": "compare"}]
    assert vocabulary.summary(cases, "sim") == "kernel defect ×2 (graph fail ×2)"
    ok = [{"verdict": "sim_garbage_graph_ok", "stage": "compare"}]
    assert vocabulary.summary(ok, "sim") == "acceptable ×1 (SIM garbage · graph ok ×1)"
    infra = [{"verdict": "not_run", "stage": "device"}, {"verdict": "pass", "stage": "compare"}]
    assert vocabulary.summary(infra, "npu") == (
        "infrastructure or harness ×1 (not run (the NPU device could not be set up) ×1); acceptable ×1 (pass ×1)")
    assert ec.of_cases(infra, "npu") == ec.INFRA


def test_a_case_that_launched_no_kernel_counts_for_nothing() -> None:
    # A script case that exited 0 and launched no jit kernel (one that only creates tensors): no kernel was wrong.
    idle = {"verdict": "not_run", "stage": "no_kernel"}
    ran = {"verdict": "sim_output_unwritten", "stage": "sim"}
    assert ec.of_cases([ran, idle, idle], "sim") == ec.OK
    assert vocabulary.summary([ran, idle, idle], "sim") == (
        "cannot judge here ×2 (not run (launched no kernel) ×2); acceptable ×1 (SIM output unwritten ×1)")
    assert ec.of_cases([idle], "sim") == ec.UNUSABLE  # nothing at all was judged: never 0
    assert vocabulary.summary([idle], "sim") == "cannot judge here ×1 (not run (launched no kernel) ×1)"
    assert ec.of_cases([idle, {"verdict": "graph_fail", "stage": "graph_verify"}], "sim") == ec.KERNEL_DEFECT


def test_a_function_marked_skip_counts_for_nothing_and_one_we_cannot_call_is_unusable() -> None:
    skipped = {"verdict": "not_run", "stage": "skipped"}
    ran = {"verdict": "sim_garbage_graph_ok", "stage": "sim"}
    assert ec.of_cases([ran, skipped], "sim") == ec.OK
    assert vocabulary.summary([ran, skipped], "sim") == (
        "cannot judge here ×1 (not run (marked skip by the test) ×1); acceptable ×1 (SIM garbage · graph ok ×1)")
    assert ec.of_cases([skipped], "sim") == ec.UNUSABLE
    assert vocabulary.summary([skipped], "sim") == "cannot judge here ×1 (not run (marked skip by the test) ×1)"
    uncallable = {"verdict": "not_run", "stage": "arguments"}  # its kernel never ran: never a kernel defect
    assert ec.of_cases([ran, uncallable], "sim") == ec.UNUSABLE
