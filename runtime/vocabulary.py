"""The words every surface uses for a verdict: its class, its label, its colour, its headline.

The CLI (runtime.cli.console), the JUnit writer and every dashboard page import these, so a verdict reads
the same everywhere (docs/dashboard.md §1). A verdict's class is what its exit code means
(runtime.exit_codes): acceptable, kernel defect, unusable input, infrastructure.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime import exit_codes, numbers, verdicts

# By exit code (runtime.exit_codes: 0, 1, 2, 3), whose words these are.
CLASS_BY_CODE = exit_codes.WORDS
ACCEPTABLE, KERNEL_DEFECT, UNUSABLE_INPUT, INFRASTRUCTURE = (
    CLASS_BY_CODE[c] for c in (exit_codes.OK, exit_codes.KERNEL_DEFECT, exit_codes.UNUSABLE, exit_codes.INFRA))
# One colour per class: CSS custom properties on the pages (web/static/app.css .vc-*), rich styles in the CLI.
CLASS_CSS = {ACCEPTABLE: "vc-acceptable", KERNEL_DEFECT: "vc-kernel-defect", UNUSABLE_INPUT: "vc-unusable-input",
             INFRASTRUCTURE: "vc-infrastructure"}
CLASS_RICH = {ACCEPTABLE: "bold green", KERNEL_DEFECT: "bold red", UNUSABLE_INPUT: "bold yellow",
              INFRASTRUCTURE: "bold blue"}

NOISE_PREFIX = "noise-"  # runtime.judge.diagnose: a known-benign pypto log line, never a headline

# Verdict ids in words; the rest read with their underscores as spaces.
LABELS = {"sim_garbage_npu_ok": "SIM garbage · NPU ok", "sim_garbage_graph_ok": "SIM garbage · graph ok",
          "sim_only_error": "SIM-only error", "npu_only_fail": "NPU-only fail",
          "sim_output_unwritten": "SIM output unwritten", "graph_fail": "graph fail",
          "version_skew": "written for another pypto", "resource_limit": "stopped at a limit",
          "sim_unsupported": "SIM cannot simulate it",
          # the combined verdict id says "awaiting"; whether an NPU job exists is for the page to say
          "awaiting_npu": "SIM could not decide"}


def label(verdict: str | None) -> str:
    """A verdict id as words: sim_garbage_graph_ok -> 'SIM garbage · graph ok'."""
    if not verdict:
        return "—"
    return LABELS.get(verdict, verdict.replace("_", " "))


def verdict_class(verdict: str | None, mode: str, stage: str = "") -> str | None:
    """The class of one case's verdict for its mode; None while it has none, and for a case with no
    kernel to judge (exit_codes.NO_KERNEL: it counts for nothing)."""
    if not verdict:
        return None
    return CLASS_BY_CODE.get(exit_codes.of_case(verdict, mode, stage))


def cases_class(cases: Iterable[Any], mode: str) -> str | None:
    """The class of a set of cases (dicts or objects with verdict and stage): the worst one wins,
    as in the exit code; None when no case has a verdict."""
    def get(case: Any, key: str) -> str:
        return str((case.get(key) if isinstance(case, dict) else getattr(case, key, "")) or "")

    judged = [c for c in cases if get(c, "verdict")]
    if not judged:
        return None
    return CLASS_BY_CODE[exit_codes.of_cases(judged, mode)]


def is_noise(rule: str) -> bool:
    return rule.startswith(NOISE_PREFIX)


def explaining_rules(rules: str | Iterable[str] | None) -> list[str]:
    """The diagnosis rules that explain a failure: the stored space-separated list (or a list) without
    the noise rules, which only say a log line is harmless."""
    ids = rules.split() if isinstance(rules, str) else list(rules or [])
    return [r for r in ids if r and not is_noise(r)]


def deciding_text(mode: str, verdict: str | None, max_abs_diff: Any = None, graph_max_abs_diff: Any = None,
                  atol: Any = None, mismatch_count: Any = None) -> str:
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
    if atol is not None:
        text += f" / atol {numbers.sig(atol)}"
    if mismatch_count:
        text += f", {numbers.sig(mismatch_count)} mismatched"
    return text


def headline(row: dict[str, Any]) -> str:
    """A failing case in one line: its class and verdict, the deciding evidence, the rule that explains
    it. `row` has verdict, mode and optionally max_abs_diff, graph_max_abs_diff, atol, diagnosis_rules,
    stage (a suite run's result row, or a case's)."""
    verdict, mode = row.get("verdict"), str(row.get("mode") or "")
    klass = verdict_class(verdict, mode, str(row.get("stage") or ""))
    parts = [f"{klass}: {label(verdict)}" if klass else label(verdict)]
    evidence = deciding_text(mode, verdict, row.get("max_abs_diff"), row.get("graph_max_abs_diff"), row.get("atol"),
                             row.get("mismatch_count"))
    if evidence and verdict not in (verdicts.SUSPECT_FAKE_PASS,):
        parts.append(evidence)
    rules = explaining_rules(row.get("diagnosis_rules"))
    if rules:
        parts.append("diagnosis " + ", ".join(rules))
    return " · ".join(parts)
