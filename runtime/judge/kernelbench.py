"""The judge's rules for a KernelBench task, and our verdict in the gym's words (docs/kernelbench.md §3, §4).

    judge(case)            S5: more than one jit kernel in one forward is a cheat, from the launch records
    gym_verdict(case, cheats) -> (final_verdict, failure_category, reasoning)

The other cheat classes need no rule of their own: a forward that never launches a kernel (S1, S2, S6),
a try/except fallback (S3) and an output the kernel did not write are already `suspect_fake_pass` from
the data flow; wrong maths is `graph_fail` from graph verify.
"""
from __future__ import annotations

from typing import Any

from runtime import verdicts as v
from runtime.judge.reruns import GRAPH_MEMORY_RULE
from runtime.judge import run_options
from runtime.report import CaseResult, Diagnosis

MULTI_KERNEL = Diagnosis(
    rule="gym-multi-kernel", sim_only=False,
    cause="The forward launched more than one jit kernel; the gym's benchmark asks for one fused kernel per "
          "operator and counts more as a cheat (S5, CHEAT_MULTI_KERNEL).",
    fix="Fuse the steps into one @pypto.frontend.jit kernel called once per forward.")
MATHS_OUTSIDE = Diagnosis(
    rule="gym-maths-outside-jit", sim_only=False,
    cause="Torch computed values outside the jit kernel, on what the kernel reads or on what it wrote; the gym "
          "allows only moves, views, casts and broadcasts there (S4: core maths outside the jit).",
    fix="Compute it inside the @pypto.frontend.jit kernel; keep only reshapes, casts and allocation outside.")
# Verdicts that ran no forward to the end: no launch count to hold against it.
_NO_FORWARD = {v.CRASH, v.TIMEOUT, v.RESOURCE_LIMIT, v.NOT_RUN, v.VERSION_SKEW, v.SIM_UNSUPPORTED}


def kernels(case: CaseResult) -> list[str]:
    """The distinct jit kernels the forward launched, in launch order."""
    return list(dict.fromkeys(launch.kernel for launch in case.launches))


def outside_maths(events: list[Any]) -> list[dict[str, str]]:
    """The job's S4 findings: ops that computed values outside the kernel (runtime.evidence.flow)."""
    found = [f for e in events if isinstance(e, dict) and e.get("event") == "outside_maths"
             for f in (e.get("findings") or []) if isinstance(f, dict)]
    return [{k: str(f.get(k, ""))[:200] for k in ("side", "op", "where")} for f in found[:20]]


def judge(case: CaseResult, events: list[Any]) -> None:
    """The gym's runtime cheat rules on a finished case: S5 from the launches, S4 from the data flow."""
    if case.verdict in _NO_FORWARD:
        return
    launched = kernels(case)
    maths = outside_maths(events)
    if len(launched) > 1:
        _cheat(case, MULTI_KERNEL, f"the gym's rule S5: {len(launched)} jit kernels in one forward "
                                   f"({', '.join(launched)}); a benchmark operator is one fused kernel")
    elif maths and launched:
        first = maths[0]
        side = "on what the kernel wrote" if first["side"] == "after" else "on what the kernel then read"
        _cheat(case, MATHS_OUTSIDE, f"the gym's rule S4: torch computed {first['op']} {side}"
                                    + (f" at {first['where']}" if first["where"] else "")
                                    + "; the core maths belongs in the jit kernel")
        case.evidence = {**case.evidence, "outside_maths": maths}


def _cheat(case: CaseResult, diagnosis: Diagnosis, reason: str) -> None:
    case.verdict, case.verdict_reason = v.SUSPECT_FAKE_PASS, reason
    case.diagnosis = [Diagnosis(**{**diagnosis.__dict__, "stage": case.stage}), *case.diagnosis]


# Our verdict -> the gym's (final_verdict, failure_category), before the cheat and input rules below.
_GYM = {
    v.PASS: ("PASS", ""),
    v.SIM_GARBAGE_GRAPH_OK: ("PASS", ""),
    v.GRAPH_FAIL: ("FAIL_CORRECTNESS", "CORRECTNESS_NUMERICAL"),
    v.PRECISION_FAIL: ("FAIL_CORRECTNESS", "CORRECTNESS_NUMERICAL"),
    v.STRUCTURAL_ERROR: ("FAIL_CORRECTNESS", "CORRECTNESS_RUNTIME"),
    v.CRASH: ("FAIL_CORRECTNESS", "CORRECTNESS_RUNTIME"),
    v.TIMEOUT: ("ERROR", "ERROR_VERIFIER_OR_CLI"),
    v.RESOURCE_LIMIT: ("ERROR", "ERROR_VERIFIER_OR_CLI"),
    v.VERSION_SKEW: ("ERROR", "ERROR_OTHER"),
    v.SIM_UNSUPPORTED: ("ERROR", "ERROR_OTHER"),
    v.SIM_OUTPUT_UNWRITTEN: ("ERROR", "ERROR_OTHER"),
    v.NOT_RUN: ("ERROR", "ERROR_OTHER"),
}


def gym_verdict(case: CaseResult, cheats: dict[str, Any]) -> tuple[str, str, str]:
    """The gym's final_verdict and failure_category for one case, with the evidence in a sentence."""
    reason = case.verdict_reason or case.verdict
    if case.verdict == v.SUSPECT_FAKE_PASS:
        multi = any(d.rule == MULTI_KERNEL.rule for d in case.diagnosis)
        return "FAIL_CHEAT", "CHEAT_MULTI_KERNEL" if multi else "CHEAT_SEMANTIC", f"cheat from evidence: {reason}"
    if (case.evidence or {}).get("run_options"):
        options = run_options.said(case.evidence["run_options"])
        return "FAIL_CHEAT", "CHEAT_SEMANTIC", f"the gym's rule S8: the kernel launched under options that skip work ({options})"
    if case.verdict == v.NOT_RUN and case.stage == "golden":
        return "BASELINE_FAILED", "BASELINE_FAILED", f"the task's Model failed before the operator ran: {reason}"
    if case.verdict == v.STRUCTURAL_ERROR and _shape_or_io(case):
        return "FAIL_CORRECTNESS", "CORRECTNESS_SHAPE_OR_IO", reason
    final, category = _GYM.get(case.verdict, ("ERROR", "ERROR_OTHER"))
    if final == "PASS":
        warned = [c["name"] for c in cheats.get("checks", []) if c.get("status") in ("warn", "fail")]
        note = f"; mechanical warnings: {', '.join(warned)}" if warned else ""
        return final, "", f"graph verify computed the task's output on the CPU within rtol=atol=1e-3{note}"
    if case.verdict == v.SIM_OUTPUT_UNWRITTEN and (case.graph_verify or {}).get("rule") == GRAPH_MEMORY_RULE:
        reason = ("SIM ran the kernel but graph verify needed more memory than the case had: run it again with "
                  "more `--memory` and graph verify decides it on this host, no NPU needed")
    elif case.verdict == v.SIM_OUTPUT_UNWRITTEN:
        reason = "SIM ran the kernel but graph verify gave no evidence on this host: judge it on an NPU"
    return final, category, reason


def _shape_or_io(case: CaseResult) -> bool:
    text = f"{case.error.type if case.error else ''} {case.error.message if case.error else ''}"
    return case.stage == "compare" or "StateDictMismatch" in text or "state_dict" in text
