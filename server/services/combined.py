"""The verdict across modes for one operator case: the product's point.

Inputs are the latest SIM case verdict (graph verify included in it: sim_garbage_graph_ok /
graph_fail) and the latest NPU case verdict, each with its stage; either may be missing.

| combined              | when |
|-----------------------|------|
| suspect_fake_pass     | either mode says the result cannot have come from the kernel |
| kernel_defect         | the NPU result is outside tolerance, or graph verify computed a wrong result |
| structural_error      | the kernel fails to compile/run in SIM (no NPU result, or it fails on the NPU too) |
| sim_only_error        | SIM fails structurally but the NPU runs it within tolerance |
| npu_only_fail         | SIM runs it, the NPU fails to compile/run it |
| resource_limit        | a mode was stopped at the job's memory, process or disk limit before it could be judged; not a kernel defect, raise the limit |
| version_skew          | written for another pypto: a mode's pypto lacks what the kernel uses (docs/versions.md §1), and no mode passed; not a kernel defect |
| not_judged            | a mode did not run the kernel for a reason that is not the kernel's (`not_run` whose outcome is not `failed`: a fixture it cannot supply, an NPU-only golden, marked skip, the harness, ...; runtime/exit_codes.py TABLE), and the other mode decided nothing; not a kernel defect |
| sim_garbage_npu_ok    | THE FLAG: SIM output unwritten or garbage (or SIM cannot simulate the kernel), NPU within tolerance: not a kernel defect |
| sim_garbage_graph_ok  | no NPU result yet; SIM garbage, but graph verify matched the golden |
| awaiting_npu          | SIM structure OK (or SIM cannot simulate the kernel: sim_unsupported), no graph evidence, no NPU result yet |
| pass                  | the NPU is within tolerance and SIM agrees (or there is no SIM result) |

A per-case `inconclusive` (a compare that cannot tell a correct kernel from garbage, runtime.judge.degenerate)
says nothing about the maths: in SIM it reads as SIM garbage, and an NPU one as no NPU result yet. A
`not_run` at a stage that is not the kernel's fault reads as no result of that mode: the other mode decides,
with the stage named in the reason, and `not_judged` when it decides nothing.
"""
from __future__ import annotations

from typing import Any

from runtime import exit_codes, verdicts, vocabulary

PASS = "pass"
SIM_GARBAGE_NPU_OK = "sim_garbage_npu_ok"
SIM_GARBAGE_GRAPH_OK = "sim_garbage_graph_ok"
KERNEL_DEFECT = "kernel_defect"
STRUCTURAL_ERROR = "structural_error"
SIM_ONLY_ERROR = "sim_only_error"
NPU_ONLY_FAIL = "npu_only_fail"
SUSPECT_FAKE_PASS = "suspect_fake_pass"
AWAITING_NPU = "awaiting_npu"
VERSION_SKEW = "version_skew"
RESOURCE_LIMIT = "resource_limit"
NOT_JUDGED = "not_judged"
SIM_UNSUPPORTED = "sim_unsupported"  # a per-case SIM verdict (runtime.verdicts), not a combined one
INCONCLUSIVE = "inconclusive"  # per-case too, in either mode

COMBINED = (KERNEL_DEFECT, SUSPECT_FAKE_PASS, STRUCTURAL_ERROR, NPU_ONLY_FAIL, SIM_ONLY_ERROR, RESOURCE_LIMIT,
            VERSION_SKEW, NOT_JUDGED,
            SIM_GARBAGE_NPU_OK, SIM_GARBAGE_GRAPH_OK, AWAITING_NPU, PASS)
# Worst first: an operator's verdict is its worst case's.
SEVERITY = {name: i for i, name in enumerate(COMBINED)}
FLAGGED = (SIM_GARBAGE_NPU_OK, SIM_GARBAGE_GRAPH_OK)

# Per-mode verdicts (runtime.verdicts), grouped.
_SIM_BROKEN = {"structural_error", "crash", "timeout", "resource_limit", "not_run"}
_SIM_GARBAGE = {"sim_output_unwritten", "sim_garbage_graph_ok", INCONCLUSIVE}
_NPU_BROKEN = {"structural_error", "crash", "timeout", "resource_limit", "not_run"}


# SIM could not decide because graph verify needed more memory than the job had (runtime.judge.reruns): more
# memory decides it on a CPU host, no NPU needed.
MEMORY_REASON = ("SIM ran the kernel, but graph verify needed more memory than the job's limit, so its maths was not "
                 "judged: run it with more memory (`crosscheck run PATH --memory GIB`, or the server's CASE_MEMORY_GIB)"
                 " and graph verify decides it on a CPU host")


def _not_judged(verdict: str | None, mode: str, stage: str) -> bool:
    """A not_run that says nothing against the kernel: its stage's outcome is not a kernel defect."""
    return verdict == verdicts.NOT_RUN and exit_codes.outcome(verdict, mode, stage) != exit_codes.FAILED


def _stage_words(stage: str) -> str:
    return vocabulary.STAGE_WORDS.get(stage) or f"stopped at stage {stage or 'unknown'}"


def combine(sim: str | None, npu: str | None, graph_memory: bool = False, sim_stage: str = "",
            npu_stage: str = "") -> tuple[str, str]:
    """(combined verdict, one-line reason) from the latest SIM and NPU case verdicts and their stages;
    `graph_memory`: SIM's graph verify was stopped by the job's memory limit."""
    if "suspect_fake_pass" in (sim, npu):
        mode = "SIM" if sim == "suspect_fake_pass" else "NPU"
        return SUSPECT_FAKE_PASS, f"{mode}: the result matches but the kernel cannot have produced it"
    sim_off, npu_off = _not_judged(sim, "sim", sim_stage), _not_judged(npu, "npu", npu_stage)
    if sim_off or npu_off:  # that mode gave no result: the other decides, or nothing does
        why = "; ".join(f"{name}: not run: {_stage_words(stage)}"
                        for name, off, stage in (("SIM", sim_off, sim_stage), ("NPU", npu_off, npu_stage)) if off)
        rest_sim, rest_npu = (None if sim_off else sim), (None if npu_off else npu)
        if rest_sim is None and rest_npu is None:
            return NOT_JUDGED, why
        verdict, reason = combine(rest_sim, rest_npu, graph_memory, sim_stage, npu_stage)
        if verdict == AWAITING_NPU:  # the other mode decided nothing either
            return NOT_JUDGED, f"{why}; {reason}"
        return verdict, f"{reason}; {why}"
    if npu == INCONCLUSIVE:
        verdict, why = combine(sim, None, graph_memory, sim_stage)
        return verdict, f"{why}; the NPU's compare cannot tell a correct kernel from garbage (inconclusive)"
    if npu == "precision_fail":
        return KERNEL_DEFECT, "the NPU result is outside tolerance"
    if sim == "graph_fail":
        return KERNEL_DEFECT, "graph verify: the kernel's tensor graph computes a wrong result"
    if VERSION_SKEW in (sim, npu) and npu != "pass":
        modes = " and ".join(m for m, v in (("SIM", sim), ("NPU", npu)) if v == VERSION_SKEW)
        return VERSION_SKEW, f"{modes}: written for another pypto than the one that ran it"
    if (sim == RESOURCE_LIMIT and npu in (None, RESOURCE_LIMIT)) or (npu == RESOURCE_LIMIT and sim not in _SIM_BROKEN):
        modes = " and ".join(m for m, v in (("SIM", sim), ("NPU", npu)) if v == RESOURCE_LIMIT)
        return RESOURCE_LIMIT, f"{modes}: stopped at the job's resource limit before it could be judged; raise it"
    if sim == SIM_UNSUPPORTED:  # SIM could not simulate it: nothing known from SIM, the NPU decides
        if npu is None:
            return AWAITING_NPU, "SIM cannot simulate an op this kernel uses, so nothing is known yet; it needs an NPU run"
        if npu in _NPU_BROKEN:
            return STRUCTURAL_ERROR, f"NPU: {npu} (SIM cannot simulate this kernel)"
        return SIM_GARBAGE_NPU_OK, "SIM cannot simulate an op this kernel uses; the NPU result is within tolerance"
    if npu is None:
        if sim is None:
            return AWAITING_NPU, "no result yet"
        if sim in _SIM_BROKEN:
            return STRUCTURAL_ERROR, f"SIM: {sim}"
        if sim == "sim_garbage_graph_ok":
            return SIM_GARBAGE_GRAPH_OK, ("SIM writes no outputs on CPU hosts, so its garbage is not a kernel "
                                          "defect; graph verify matched the golden")
        if sim == "pass":
            return AWAITING_NPU, "SIM passed; hardware precision needs an NPU run"
        if sim == INCONCLUSIVE:  # graph verify did give a verdict: the compare itself cannot tell (degenerate)
            return AWAITING_NPU, ("SIM's compare cannot tell a correct kernel from garbage (inconclusive: the golden "
                                  "is degenerate, e.g. one value everywhere), so its maths was not judged; a case "
                                  "whose golden varies decides")
        # Nothing is waiting unless an NPU job exists (the pages say which): SIM could not decide.
        if graph_memory:
            return AWAITING_NPU, MEMORY_REASON
        return AWAITING_NPU, ("SIM ran the kernel but could not judge its maths (graph verify gave no verdict); "
                              "an NPU run would decide")
    if npu in _NPU_BROKEN:
        if sim is None or sim in _SIM_BROKEN:
            return STRUCTURAL_ERROR, f"NPU: {npu}" + (f", SIM: {sim}" if sim else "")
        return NPU_ONLY_FAIL, f"SIM runs the kernel, the NPU does not ({npu})"
    # npu == "pass"
    if sim in _SIM_BROKEN:
        return SIM_ONLY_ERROR, f"SIM fails ({sim}) but the NPU result is within tolerance"
    if sim == "precision_fail":  # SIM disagrees with the hardware, which is within tolerance
        return SIM_GARBAGE_NPU_OK, ("SIM's output is outside tolerance but the NPU result is within it: "
                                    "SIM's numbers are not a kernel defect")
    if sim in _SIM_GARBAGE:
        return SIM_GARBAGE_NPU_OK, ("SIM writes no outputs on CPU hosts, so its garbage is not a kernel defect; "
                                    "the NPU result is within tolerance")
    return PASS, "the NPU result is within tolerance"


# An operator's verdict over ALL its cases: defects worst first, then the weakest evidence, so
# that one case checked on an NPU never makes the operator read "NPU ok" (or "pass").
CLAIM_ORDER = (KERNEL_DEFECT, SUSPECT_FAKE_PASS, STRUCTURAL_ERROR, NPU_ONLY_FAIL, SIM_ONLY_ERROR, RESOURCE_LIMIT,
               VERSION_SKEW, NOT_JUDGED, AWAITING_NPU, SIM_GARBAGE_GRAPH_OK, SIM_GARBAGE_NPU_OK, PASS)
_CLAIM = {name: i for i, name in enumerate(CLAIM_ORDER)}


def worst(verdicts: list[str]) -> str | None:
    """The operator's verdict from its cases': the worst defect, else the weakest claim."""
    return min(verdicts, key=lambda v: _CLAIM.get(v, -1)) if verdicts else None


def outcome(sim: Any, npu: Any) -> str | None:
    """A case's outcome across modes from its latest SIM and NPU results (rows with verdict and stage),
    in the one vocabulary (runtime.vocabulary): the same words its job pages and `crosscheck run` say."""
    return vocabulary.across_modes(
        vocabulary.outcome(getattr(r, "verdict", None), mode, getattr(r, "stage", "") or "")
        for r, mode in ((sim, "sim"), (npu, "npu")) if r is not None)
