"""Diagnoses the verdict itself implies, ahead of any matched log line.

A golden fallback found by lint, or an output the kernel never wrote, explains a fake pass or a
failed graph verify better than graph-verify-mismatch ("the kernel's maths is wrong"), which would
send the developer to check maths that never ran. When either applies it comes first and
graph-verify-mismatch is dropped. A failed graph verify that no log line explained (a script's own
assert on the graph's result prints no FB4001 line) still gets graph-verify-mismatch from the
verdict: a noise rule is never the only diagnosis of a kernel defect (docs/dashboard.md §2).
"""
from __future__ import annotations

from typing import Any

from runtime import numbers
from runtime.judge import diagnose
from runtime.report import Diagnosis

GRAPH_MISMATCH = "graph-verify-mismatch"
GOLDEN_FALLBACK = Diagnosis(
    rule="golden-fallback", sim_only=False,
    cause="Lint found a try/except (or similar) around the kernel that returns the golden or plain torch "
          "maths: the result that matches is not the kernel's.",
    fix="Remove the fallback so that a failing kernel fails; see the lint finding for the line.")
OUTPUT_NOT_WRITTEN = Diagnosis(
    rule="output-not-written", sim_only=False,
    cause="The kernel never assigned its output argument, so the output still holds what was there before "
          "({before}): nothing the kernel computed was compared.",
    fix="Write the result into the output tensor argument (e.g. `out[:] = ...` or `pypto.assemble`), "
        "not into a new local tensor.")


def not_written(graph: dict[str, Any]) -> Diagnosis:
    """output-not-written, saying what the unwritten output held by graph verify's own numbers: identical to the
    golden only when its max |diff| was 0, else leftover memory as far from the golden as it measured."""
    diff = (graph.get("metrics") or {}).get("max_abs_diff")
    if diff == 0:
        before = "here identical to the golden"
    elif isinstance(diff, (int, float)):
        before = f"here leftover memory, graph verify's max |diff| {numbers.sig(diff)} from the golden"
    else:
        before = "not the kernel's result"
    return Diagnosis(**{**OUTPUT_NOT_WRITTEN.__dict__, "cause": OUTPUT_NOT_WRITTEN.cause.format(before=before)})


def failed_stage(stage_failed: str | None, last_stage: str, mode: str, graph: dict[str, Any] | None,
                 verdict: str) -> str:
    """The stage to report a case at: the one that failed, graph verify when it rejected the
    kernel, compare when the comparison did; else the last stage reached."""
    if stage_failed:
        return stage_failed
    if graph and graph.get("status") == "fail":
        return "graph_verify"
    if verdict in ("precision_fail", "suspect_fake_pass"):
        return "compare"
    return last_stage or mode


def lead(diagnoses: list[Diagnosis], verdict: str, stage: str, golden_fallback: bool,
         graph: dict[str, Any] | None) -> list[Diagnosis]:
    """The verdict's own diagnoses first; graph-verify-mismatch dropped when they explain it."""
    own = []
    if golden_fallback and verdict in ("suspect_fake_pass", "graph_fail"):
        own.append(GOLDEN_FALLBACK)
    if graph and graph.get("status") == "fail" and graph.get("output_written") is False:
        own.append(not_written(graph))
    explained = any(not d.rule.startswith(diagnose.NOISE_PREFIX) for d in diagnoses)
    if not own and verdict == "graph_fail" and not explained:
        own.append(_graph_mismatch(graph))
        return [Diagnosis(**{**d.__dict__, "stage": stage}) for d in own] + diagnoses
    if not own:
        return diagnoses
    own = [Diagnosis(**{**d.__dict__, "stage": stage}) for d in own]
    return own + [d for d in diagnoses if d.rule != GRAPH_MISMATCH]


def _graph_mismatch(graph: dict[str, Any] | None) -> Diagnosis:
    """graph-verify-mismatch from the rule base, its evidence the graph's own numbers."""
    rule = next(r for r in diagnose.load_rules() if r.id == GRAPH_MISMATCH)
    m = (graph or {}).get("metrics") or {}
    evidence = ", ".join(f"{k} {m[k]}" for k in ("max_abs_diff", "atol", "mismatch_count", "numel") if m.get(k) is not None)
    return Diagnosis(rule=rule.id, cause=rule.cause, fix=rule.fix, sim_only=rule.sim_only,
                     evidence=f"graph verify: {evidence}" if evidence else "graph verify failed", origin="verdict")
