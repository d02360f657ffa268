"""The words every surface uses for a verdict: its outcome, its label, its colour, its headline.

The CLI (runtime.cli.console), the JUnit writer, the `crosscheck up` console, the webhooks and every
dashboard page import these, so a verdict reads the same everywhere (docs/dashboard.md §1). A verdict's
outcome comes from the one table in runtime.exit_codes: kernel defect (failed), infrastructure or harness
(broken), cannot judge here (skipped), acceptable.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime import exit_codes, numbers, verdicts

FAILED, BROKEN, SKIPPED, ACCEPTABLE = exit_codes.OUTCOMES  # worst first
OUTCOMES = exit_codes.OUTCOMES
# The four words, one colour each: CSS on the pages (web/static/app.css .vc-*), rich styles in the CLI, and
# the JUnit element (docs/dashboard.md §1).
WORDS = {FAILED: "kernel defect", BROKEN: "infrastructure or harness", SKIPPED: "cannot judge here",
         ACCEPTABLE: "acceptable"}
CSS = {o: f"vc-{o}" for o in OUTCOMES}
RICH = {FAILED: "bold red", BROKEN: "bold yellow", SKIPPED: "bold blue", ACCEPTABLE: "bold green"}
JUNIT = {FAILED: "failure", BROKEN: "error", SKIPPED: "skipped"}
# What a not_run case's stage means, in words (runtime.verdicts).
STAGE_WORDS = {"golden": "the golden failed", "device": "the NPU device could not be set up",
               verdicts.ENVIRONMENT_STAGE: "this host's Python lacks a package",
               verdicts.NPU_ONLY_STAGE: "a reference only an NPU can compute",
               verdicts.ARGUMENTS_STAGE: "an argument crosscheck cannot supply",
               verdicts.NO_KERNEL_STAGE: "launched no kernel", verdicts.SKIPPED_STAGE: "marked skip by the test",
               verdicts.HARNESS_STAGE: "crosscheck's own harness failed"}
GATE_NOTE = "the regression gate counts kernel defects only"

NOISE_PREFIX = "noise-"  # runtime.judge.diagnose: a known-benign pypto log line, never a headline

# Verdict ids in words; the rest read with their underscores as spaces.
LABELS = {"sim_garbage_npu_ok": "SIM garbage · NPU ok", "sim_garbage_graph_ok": "SIM garbage · graph ok",
          "sim_only_error": "SIM-only error", "npu_only_fail": "NPU-only fail",
          "sim_output_unwritten": "SIM output unwritten", "graph_fail": "graph fail",
          "version_skew": "written for another pypto", "resource_limit": "stopped at a limit",
          "sim_unsupported": "SIM cannot simulate it",
          # the combined verdict of a case no mode ran for a reason not the kernel's (server.services.combined)
          "not_judged": "not judged here",
          # the combined verdict id says "awaiting"; whether an NPU job exists is for the page to say
          # beside the outcome `acceptable` (SIM's structure is fine) it must not read as a failure
          "awaiting_npu": "SIM ok · maths not judged"}


def label(verdict: str | None) -> str:
    """A verdict id as words: sim_garbage_graph_ok -> 'SIM garbage · graph ok'."""
    if not verdict:
        return "—"
    return LABELS.get(verdict, verdict.replace("_", " "))


def _get(case: Any, key: str) -> str:
    return str((case.get(key) if isinstance(case, dict) else getattr(case, key, "")) or "")


def outcome(verdict: str | None, mode: str, stage: str = "") -> str | None:
    """One case's outcome for its mode (runtime.exit_codes.TABLE); None while it has no verdict."""
    return exit_codes.outcome(verdict, mode, stage) if verdict else None


def word(outcome_id: str | None) -> str:
    """An outcome in words: 'failed' -> 'kernel defect'."""
    return WORDS.get(outcome_id or "", "")


def worst(outcomes: Iterable[str | None]) -> str | None:
    seen = {o for o in outcomes if o}
    return next((o for o in OUTCOMES if o in seen), None)


def cases_outcome(cases: Iterable[Any], mode: str) -> str | None:
    """The outcome of a set of cases (dicts or objects with verdict and stage), as their exit code: the worst
    one wins, and a case with nothing to judge (no kernel, marked skip) counts only when all are such."""
    judged = [c for c in cases if _get(c, "verdict")]
    if not judged:
        return None
    pairs = [(exit_codes.of_case(_get(c, "verdict"), mode, _get(c, "stage")),
              exit_codes.outcome(_get(c, "verdict"), mode, _get(c, "stage"))) for c in judged]
    counted = [o for code, o in pairs if code not in exit_codes.IDLE]
    return worst(counted) if counted else SKIPPED


def across_modes(outcomes: Iterable[str | None]) -> str | None:
    """One case's (or operator's) outcome from its modes': a mode that cannot judge it counts only when no
    mode could, so an NPU's acceptable is not hidden by SIM's 'cannot judge here'."""
    seen = [o for o in outcomes if o]
    judged = [o for o in seen if o != SKIPPED]
    return worst(judged or seen)


def detail(verdict: str, stage: str = "") -> str:
    """A verdict in words with what its stage adds: 'not run (an argument crosscheck cannot supply)'."""
    extra = STAGE_WORDS.get(stage) if verdict == verdicts.NOT_RUN else None
    return f"{label(verdict)} ({extra})" if extra else label(verdict)


def summary(cases: Iterable[Any], mode: str) -> str:
    """A run's cases in one line, by outcome worst first: 'kernel defect ×2 (graph fail ×2); cannot judge
    here ×1 (not run (an argument crosscheck cannot supply) ×1)'."""
    groups: dict[str, dict[str, int]] = {}
    for c in cases:
        verdict, stage = _get(c, "verdict"), _get(c, "stage")
        if not verdict:
            continue
        what = groups.setdefault(exit_codes.outcome(verdict, mode, stage), {})
        what[detail(verdict, stage)] = what.get(detail(verdict, stage), 0) + 1
    if not groups:
        return f"{WORDS[SKIPPED]}: no case was judged"
    return "; ".join(f"{WORDS[o]} ×{sum(groups[o].values())} (" + ", ".join(f"{d} ×{n}" for d, n in groups[o].items())
                     + ")" for o in OUTCOMES if o in groups)


def is_noise(rule: str) -> bool:
    return rule.startswith(NOISE_PREFIX)


def explaining_rules(rules: str | Iterable[str] | None) -> list[str]:
    """The diagnosis rules that explain a failure: the stored space-separated list (or a list) without
    the noise rules, which only say a log line is harmless."""
    ids = rules.split() if isinstance(rules, str) else list(rules or [])
    return [r for r in ids if r and not is_noise(r)]


def deciding_text(mode: str, verdict: str | None, max_abs_diff: Any = None, graph_max_abs_diff: Any = None,
                  atol: Any = None, mismatch_count: Any = None, rtol: Any = None) -> str:
    """The evidence a verdict stands on, in words: graph verify's max |diff| in SIM, the NPU's on the
    NPU, against the tolerance when known. SIM's own output is never quoted: it is garbage on CPU hosts."""
    if mode == "sim":
        if graph_max_abs_diff is None:
            return ""
        text = f"graph verify max |diff| {numbers.sig(graph_max_abs_diff)}"
    else:
        if max_abs_diff is None:
            return ""
        text = f"NPU max |diff| {numbers.sig(max_abs_diff)}"
    if atol is not None:  # the tolerance applied: both halves, never an atol that an unseen rtol widened
        text += f" / atol {numbers.sig(atol)}" + (f", rtol {numbers.sig(rtol)}" if rtol is not None else "")
    if mismatch_count:
        text += f", {numbers.sig(mismatch_count)} mismatched"
    return text


def headline(row: dict[str, Any]) -> str:
    """A failing case in one line: its outcome and verdict, the deciding evidence, the rule that explains
    it. `row` has verdict, mode and optionally max_abs_diff, graph_max_abs_diff, atol, diagnosis_rules,
    stage (a suite run's result row, or a case's)."""
    verdict, mode = row.get("verdict"), str(row.get("mode") or "")
    kind = outcome(verdict, mode, str(row.get("stage") or ""))
    shown = detail(str(verdict), str(row.get("stage") or "")) if verdict else label(verdict)
    parts = [f"{WORDS[kind]}: {shown}" if kind else shown]
    evidence = deciding_text(mode, verdict, row.get("max_abs_diff"), row.get("graph_max_abs_diff"), row.get("atol"),
                             row.get("mismatch_count"), row.get("rtol"))
    if evidence and verdict not in (verdicts.SUSPECT_FAKE_PASS,):
        parts.append(evidence)
    rules = explaining_rules(row.get("diagnosis_rules"))
    if rules:
        parts.append("diagnosis " + ", ".join(rules))
    return " · ".join(parts)
