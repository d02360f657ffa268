"""The verdict across modes, over every SIM x NPU pair, against a table written out by hand.

Rows: the latest SIM case verdict (None = no SIM result). Columns: the latest NPU case verdict.
The expected values follow the table in server/services/combined.py's docstring, cell by cell.
"""
from __future__ import annotations

import pytest

from runtime import vocabulary
from runtime.verdicts import VERDICTS
from server.services.combined import COMBINED, combine, worst

NPU = (None, "pass", "precision_fail", "structural_error", "crash", "timeout", "resource_limit", "not_run",
       "suspect_fake_pass", "version_skew", "inconclusive")

# Abbreviations, so each row fits on a line and reads as a table.
AW, PASS, KD, SE, SOE, NOF, SGN, SGG, SFP, VS, RL = ("awaiting_npu", "pass", "kernel_defect", "structural_error",
                                                     "sim_only_error", "npu_only_fail", "sim_garbage_npu_ok",
                                                     "sim_garbage_graph_ok", "suspect_fake_pass", "version_skew",
                                                     "resource_limit")

EXPECTED: dict[str | None, tuple[str, ...]] = {
    #                       NPU: None  pass  prec_fail  struct  crash  timeout  limit  not_run   fake_pass skew  inconclusive
    None:                       (AW,   PASS, KD,        SE,     SE,    SE,      RL,    SE,       SFP,      VS, AW),
    "pass":                     (AW,   PASS, KD,        NOF,    NOF,   NOF,     RL,    NOF,      SFP,      VS, AW),
    # SIM wrote a wrong output but the NPU is within tolerance: SIM does not agree, so not a
    # plain pass; SIM's numbers are garbage and the hardware is fine (the flag).
    "precision_fail":           (AW,   SGN,  KD,        NOF,    NOF,   NOF,     RL,    NOF,      SFP,      VS, AW),
    "structural_error":         (SE,   SOE,  KD,        SE,     SE,    SE,      SE,    SE,       SFP,      VS, SE),
    "crash":                    (SE,   SOE,  KD,        SE,     SE,    SE,      SE,    SE,       SFP,      VS, SE),
    "timeout":                  (SE,   SOE,  KD,        SE,     SE,    SE,      SE,    SE,       SFP,      VS, SE),
    # Stopped at our limit before it could be judged: not a defect, unless the other mode measured one.
    "resource_limit":           (RL,   SOE,  KD,        SE,     SE,    SE,      RL,    SE,       SFP,      VS, RL),
    "not_run":                  (SE,   SOE,  KD,        SE,     SE,    SE,      SE,    SE,       SFP,      VS, SE),
    "suspect_fake_pass":        (SFP,  SFP,  SFP,       SFP,    SFP,   SFP,     SFP,   SFP,      SFP,      SFP, SFP),
    "sim_output_unwritten":     (AW,   SGN,  KD,        NOF,    NOF,   NOF,     RL,    NOF,      SFP,      VS, AW),
    "sim_garbage_graph_ok":     (SGG,  SGN,  KD,        NOF,    NOF,   NOF,     RL,    NOF,      SFP,      VS, SGG),
    # Graph verify computed a wrong result: a kernel defect whatever the NPU says, unless a mode
    # says the result cannot have come from the kernel at all.
    "graph_fail":               (KD,   KD,   KD,        KD,     KD,    KD,      KD,    KD,       SFP,      KD, KD),
    # Written for another pypto (docs/versions.md §1): not a defect, unless the NPU measured one; an NPU
    # within tolerance (a host with the kernel's pypto) is the word on precision.
    "version_skew":             (VS,   PASS, KD,        VS,     VS,    VS,      VS,    VS,       SFP,      VS, VS),
    # SIM cannot simulate an op the kernel uses (runtime.judge.simgap): SIM knows nothing, the NPU decides;
    # with no NPU result it waits, never a structural error.
    "sim_unsupported":          (AW,   SGN,  KD,        SE,     SE,    SE,      RL,    SE,       SFP,      VS, AW),
    # A compare that cannot tell a correct kernel from garbage (runtime.judge.degenerate): SIM knows the structure,
    # nothing of the maths, as with its unwritten outputs; an inconclusive NPU compare is as no NPU result.
    "inconclusive":             (AW,   SGN,  KD,        NOF,    NOF,   NOF,     RL,    NOF,      SFP,      VS, AW),
}

CASES = [(sim, npu, EXPECTED[sim][i]) for sim in EXPECTED for i, npu in enumerate(NPU)]


def test_an_operator_reads_as_its_worst_case() -> None:
    # A defect outranks everything; a case stopped at a limit or written for another pypto outranks
    # any claim of evidence, so an operator never reads better than its weakest case.
    assert worst(["version_skew", "kernel_defect", "pass"]) == "kernel_defect"
    assert worst(["sim_garbage_graph_ok", "resource_limit"]) == "resource_limit"
    assert worst(["pass", "version_skew"]) == "version_skew"


def test_the_table_covers_every_sim_verdict() -> None:
    assert set(EXPECTED) == {None, *VERDICTS}
    assert all(len(row) == len(NPU) for row in EXPECTED.values())
    assert len(CASES) == 15 * 11


@pytest.mark.parametrize(("sim", "npu", "expected"), CASES, ids=[f"{s}-{n}" for s, n, _ in CASES])
def test_combine(sim: str | None, npu: str | None, expected: str) -> None:
    verdict, reason = combine(sim, npu)
    assert verdict == expected
    assert verdict in COMBINED
    assert reason and "\n" not in reason


# A not_run whose stage is no fault of the kernel (runtime/exit_codes.py TABLE: outcome skipped or broken)
# reads as no result of that mode: the other mode decides, and `not_judged` when it decides nothing (issue 35:
# mla_prolog's fixture and moe_gating's NPU-only golden read "cannot judge here · structural error").
NJ = "not_judged"
NOT_JUDGED_STAGES = ("environment", "npu_only", "arguments", "no_kernel", "skipped", "golden", "device", "harness")
# SIM not_run at such a stage, by NPU verdict (NPU's not_run at no stage: a kernel defect, as in EXPECTED).
SIM_OFF = dict(zip(NPU, (NJ, PASS, KD, SE, SE, SE, RL, SE, SFP, VS, NJ)))
# NPU not_run at such a stage, by SIM verdict.
NPU_OFF: dict[str | None, str] = {
    None: NJ, "pass": NJ, "precision_fail": NJ, "structural_error": SE, "crash": SE, "timeout": SE,
    "resource_limit": RL, "not_run": SE, "suspect_fake_pass": SFP, "sim_output_unwritten": NJ,
    "sim_garbage_graph_ok": SGG, "graph_fail": KD, "version_skew": VS, "sim_unsupported": NJ, "inconclusive": NJ}


@pytest.mark.parametrize("stage", NOT_JUDGED_STAGES)
def test_a_not_run_that_is_not_the_kernels_fault_is_never_a_structural_error(stage: str) -> None:
    words = vocabulary.STAGE_WORDS[stage]
    for npu, expected in SIM_OFF.items():
        verdict, reason = combine("not_run", npu, sim_stage=stage)
        assert verdict == expected, (stage, npu, verdict)
        assert f"SIM: not run: {words}" in reason or verdict == SFP, reason
    assert set(NPU_OFF) == {None, *VERDICTS}
    for sim, expected in NPU_OFF.items():
        verdict, reason = combine(sim, "not_run", npu_stage=stage, sim_stage="sim")
        assert verdict == expected, (stage, sim, verdict)
        assert f"NPU: not run: {words}" in reason or verdict == SFP, reason
    assert combine("not_run", "not_run", sim_stage=stage, npu_stage=stage)[0] == NJ
    # at a stage that is the kernel's (the submission never ran one) it stays a structural error
    assert combine("not_run", None, sim_stage="sim")[0] == SE
    assert combine(None, "not_run", npu_stage="compare")[0] == SE


def test_not_judged_reads_in_words_and_ranks_as_no_defect() -> None:
    assert combine("not_run", None, sim_stage="arguments") == (
        NJ, "SIM: not run: an argument crosscheck cannot supply")
    assert vocabulary.label(NJ) == "not judged here"
    # after every defect and version skew, before the acceptable claims
    assert worst([NJ, "version_skew"]) == "version_skew" and worst([NJ, "structural_error"]) == "structural_error"
    assert worst([NJ, "awaiting_npu", "pass", "sim_garbage_graph_ok"]) == NJ
    assert COMBINED.index("version_skew") < COMBINED.index(NJ) < COMBINED.index("sim_garbage_npu_ok")
