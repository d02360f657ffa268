"""The SIM debugging guide's pitfalls that a case's lint findings place and explain (docs/pypto.md §9).

pypto 0.2.0 names no usable line for some of them, and SIM accepts others that the NPU, or the script's own
run, does not. The lint saw each in the source; here each becomes part of the case it concerns:
- a pypto.view whose shape, offsets and valid_shape differ in length: the view diagnosis moves to the view's
  own line and says which lists differ (0.2.0 raises a later `SetOpAttribute` error at the wrapper's call);
  likewise "Non-tensor parameter ... must not be a torch.Tensor", raised at the call, moves to the
  `from __future__ import annotations` or the unannotated parameter that causes it;
- vec tiles that do not divide the dims they tile, seen by the lint in the annotations or here in the shapes a
  launch got, and stitch_* options on a simple kernel: warning diagnoses, also on an acceptable SIM case (the
  NPU launch fails with 107003);
- run_mode bound at import with --run_mode parsed later, or pinned to the NPU: crosscheck forces every launch
  into the job's mode (runtime/evidence/instrument.py), so the verdict judges the kernel; the case says what
  the script's own run does instead.
"""
from __future__ import annotations

import dataclasses

from runtime.judge.diagnose import NOISE_PREFIX
from runtime.lint import TilePlan
from runtime.lint.tiles import describe, untiled
from runtime.report import CaseResult, Diagnosis, LintFinding

VIEW_RULES = ("view-valid-shape-rank", "view-offsets-rank")  # the text rules a view's lengths trigger
VIEW_FINDING = "view-rank-mismatch"
# A text rule raised at the kernel's call, and the lint findings that name the line causing it, best first.
CAUSED_AT = {"tensor-param-not-annotated": ("future-annotations", "missing-tensor-annotation")}
TILES_FINDING = "vec-tiles-not-dividing"
STITCH_FINDING = "stitch-on-simple-kernel"
LATE_RUN_MODE = "argv-run-mode-in-main"
PINNED_NPU = "run-mode-pinned-npu"
RUN_MODE_AT_IMPORT = "script-run-mode-at-import"  # the case diagnosis of both run-mode findings
TILES_FIX = ("Choose vec tiles that divide each dim they tile (no larger than the dim, e.g. 1 for B=1 and 4 for H=4), "
             "or cut the tensor with pypto.view and give the last tile its valid_shape.")


def annotate(case: CaseResult, findings: list[LintFinding], mode: str,
             plans: dict[str, list[TilePlan]] | None = None) -> CaseResult:
    """The case with the diagnoses its submission's pitfall findings imply (idempotent).

    `plans` are the kernels' constant vec tiles (runtime.lint.vec_tile_plans), checked against the shapes
    the case's launches got."""
    by_rule: dict[str, list[LintFinding]] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    if by_rule.get(VIEW_FINDING):
        case.diagnosis = [_at_view(d, by_rule[VIEW_FINDING]) if d.rule in VIEW_RULES and d.origin != "lint" else d
                          for d in case.diagnosis]
    case.diagnosis = [_at_cause(d, by_rule) for d in case.diagnosis]
    tiles = by_rule.get(TILES_FINDING)
    if mode == "sim" or case.verdict != "pass":
        warning = _tiles(tiles[0], case.stage) if tiles else _launched_tiles(case, plans or {})
        if warning is not None:
            _add(case, warning)
        for stitch in by_rule.get(STITCH_FINDING, [])[:1]:
            _add(case, _stitch(stitch, case.stage))
    run_mode = (by_rule.get(LATE_RUN_MODE) or []) + (by_rule.get(PINNED_NPU) or [])
    if run_mode and case.script is not None and mode == "sim":
        diagnosis = _own_sim_run(run_mode[0], case.stage)
        if _add(case, diagnosis):
            case.verdict_reason = (f"{case.verdict_reason}; but " if case.verdict_reason else "") + \
                f"the script's own run differs: {diagnosis.evidence}"
    return case


def _at_view(diagnosis: Diagnosis, views: list[LintFinding]) -> Diagnosis:
    first = views[0]
    more = f" ({len(views) - 1} more such view(s) in the submission)" if len(views) > 1 else ""
    return dataclasses.replace(
        diagnosis, file=first.file, line=first.line, origin="lint",
        evidence=f"{first.file}:{first.line}: {first.source}",
        cause=f"The pypto.view at {first.file}:{first.line} gets lists of different lengths ({first.subject}){more}. "
              "pypto 0.2.0 names neither the view nor its line: it reports the lengths it compared "
              f"({diagnosis.evidence}) and may raise a later, unrelated-looking error at the kernel's call.",
        fix="Give that pypto.view one entry per dimension of the view in shape, offsets and valid_shape (pad with 1 "
            "and reshape afterwards when you need fewer dims).")


def _at_cause(diagnosis: Diagnosis, by_rule: dict[str, list[LintFinding]]) -> Diagnosis:
    """`diagnosis` placed at the line a lint finding names as its cause (CAUSED_AT), when there is one."""
    causes = [f for rule in CAUSED_AT.get(diagnosis.rule, ()) for f in by_rule.get(rule, [])]
    if not causes or diagnosis.origin == "lint":
        return diagnosis
    first = causes[0]
    return dataclasses.replace(diagnosis, file=first.file, line=first.line, origin="lint",
                               evidence=f"{first.file}:{first.line}: {first.source}",
                               cause=f"At {first.file}:{first.line}: {first.message} {diagnosis.cause}")


def _tiles(finding: LintFinding, stage: str) -> Diagnosis:
    return Diagnosis(
        rule=TILES_FINDING, sim_only=False, stage=stage, origin="lint", file=finding.file, line=finding.line,
        evidence=f"{finding.file}:{finding.line}: {finding.source}",
        cause=f"The vec tiles set at {finding.file}:{finding.line} do not divide the dims they tile "
              f"({finding.subject}). SIM accepts it, so this case can be acceptable here, but the NPU launch fails "
              "('launch aicpu failed: 107003').",
        fix=TILES_FIX)


def _stitch(finding: LintFinding, stage: str) -> Diagnosis:
    return Diagnosis(
        rule=STITCH_FINDING, sim_only=False, stage=stage, origin="lint", file=finding.file, line=finding.line,
        evidence=f"{finding.file}:{finding.line}: {finding.source}",
        cause=f"The option '{finding.subject}' at {finding.file}:{finding.line} is set on a kernel with no "
              "pypto.loop and no matmul. SIM runs it, so this case can be acceptable here, but the NPU launch fails "
              "('launch aicpu failed: 107003').",
        fix="Drop the stitch_* options from kernels without pypto.loop or matmul; keep them for kernels whose "
            "loops the runtime stitches.")


def _launched_tiles(case: CaseResult, plans: dict[str, list[TilePlan]]) -> Diagnosis | None:
    """The first launch argument whose shape no constant tiles of its kernel (of its rank) divide."""
    for launch in case.launches:
        kernel_plans = plans.get(launch.kernel, [])
        for index, shape in enumerate(launch.arg_shapes):
            found = untiled(list(shape), [(n, plan.tiles) for n, plan in enumerate(kernel_plans)])
            if found is None:
                continue
            plan, bad = kernel_plans[found[0]], found[2]
            return Diagnosis(
                rule=TILES_FINDING, sim_only=False, stage=case.stage, origin="launch", file=plan.file, line=plan.line,
                evidence=f"{launch.kernel} argument {index}: shape {list(shape)}, vec tiles {list(plan.tiles)}",
                cause=f"The vec tiles {list(plan.tiles)} set at {plan.file}:{plan.line} do not divide the dims they "
                      f"tile in this case: tensor argument {index} of '{launch.kernel}' has shape {list(shape)} "
                      f"({describe(bad)}). SIM accepts it, so this case can be acceptable here, but the NPU launch "
                      "fails ('launch aicpu failed: 107003').",
                fix=TILES_FIX)
    return None


def _own_sim_run(finding: LintFinding, stage: str) -> Diagnosis:
    where = f"{finding.file}:{finding.line}"
    if finding.rule == PINNED_NPU:
        how = "pins run_mode to pypto.RunMode.NPU"
        result = "`--run_mode sim` runs the kernel in NPU mode and fails with 'Not npu device' on a CPU host"
    else:
        bound = finding.subject or "its run_mode variable"
        how = f"reads run_mode at import ({bound}) while main() parses --run_mode only afterwards"
        if bound.endswith("RunMode.NPU"):
            result = "`--run_mode sim` still runs the kernel in NPU mode and fails with 'Not npu device' on a CPU host"
        elif bound.endswith("RunMode.SIM"):
            result = "`--run_mode npu` still runs the kernel in SIM, which compares nothing it computed"
        else:
            result = "--run_mode never reaches the kernel: it keeps the mode it had at import"
    return Diagnosis(
        rule=RUN_MODE_AT_IMPORT, sim_only=False, stage=stage, origin="lint", file=finding.file, line=finding.line,
        evidence=f"{result} (the jit decorator at {where} {how})",
        cause=f"The jit decorator at {where} {how}, so in the script's own run {result}. crosscheck forces every "
              "launch into the job's mode, so this case's verdict judges the kernel, not what "
              "`python <script> --run_mode sim` does.",
        fix="Decide the run mode before decorating: peek --run_mode in sys.argv at module level "
            "(_peek_run_mode_from_argv) and build runtime_options from it, or leave run_mode out.")


def _add(case: CaseResult, diagnosis: Diagnosis) -> bool:
    """Put `diagnosis` after the case's own (before noise); False when the case already has it."""
    if any(d.rule == diagnosis.rule for d in case.diagnosis):
        return False
    own = [d for d in case.diagnosis if not d.rule.startswith(NOISE_PREFIX)]
    case.diagnosis = own + [diagnosis] + [d for d in case.diagnosis if d.rule.startswith(NOISE_PREFIX)]
    return True
