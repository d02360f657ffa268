"""A case whose launches ran under pypto options that skip work (the gym's S8, docs/kernelbench.md §3).

The job reports each launch's what-runs options that differ from its stock ones (runtime.evidence.run_options).
Compile stopped short (`compile_stage`): nothing executed, so the output was never written, and the cause is the
option, not the kernel's assignment. Passes off (`disable_pass`): graph verify checks the tensor graph, before any
pass, so its evidence does not stand for the kernel that would run; a pass is not accepted on it.
"""
from __future__ import annotations

from typing import Any

from runtime import verdicts as v
from runtime.report import CaseResult, Diagnosis

COMPILE_STOPPED = Diagnosis(
    rule="compile-stopped-early", sim_only=False,
    cause="pypto's options stopped compiling before the kernel could execute ({options}): nothing ran, so the "
          "output still holds what was there before.",
    fix="Remove the `compile_stage` option (`pypto.set_host_options(compile_stage=...)` or the jit's "
        "`host_options`): a kernel under test compiles to the end.")
PASSES_OFF = Diagnosis(
    rule="compiler-passes-off", sim_only=False,
    cause="pypto's options turned compiler passes off ({options}): graph verify checks the tensor graph before "
          "any pass, so a graph pass here says nothing of the kernel that would run.",
    fix="Remove the `disable_pass` setting (`pypto.set_global_config`, `set_pass_default_config`); tune with tile "
        "shapes and pass options instead.")
ACCEPTING = (v.SIM_GARBAGE_GRAPH_OK, v.PASS)


def found(events: list[Any]) -> dict[str, str]:
    """The what-runs options any launch ran under (untrusted text, bounded)."""
    merged: dict[str, str] = {}
    for e in events:
        if isinstance(e, dict) and e.get("event") == "run_options" and isinstance(e.get("changed"), dict):
            for key, value in list(e["changed"].items())[:10]:
                merged[str(key)[:120]] = str(value)[:80]
    return merged


def said(options: dict[str, str]) -> str:
    """The options as the reports say them: `key = value, ...`."""
    return ", ".join(f"{k} = {val}" for k, val in options.items())


def judge(case: CaseResult, events: list[Any], mode: str) -> None:
    """Name the option as the cause; a SIM case accepted on graph evidence under passes off is a suspect pass."""
    options = found(events)
    if not options:
        return
    case.evidence = {**case.evidence, "run_options": options}
    stopped = {k: val for k, val in options.items() if k.endswith("compile_stage")}
    text = said(stopped or options)
    rule = COMPILE_STOPPED if stopped else PASSES_OFF
    own = Diagnosis(**{**rule.__dict__, "cause": rule.cause.format(options=text), "stage": case.stage,
                       "origin": "verdict", "evidence": text})
    if stopped:  # the option explains the unwritten output better than the kernel's assignment
        case.diagnosis = [own, *[d for d in case.diagnosis if d.rule != "output-not-written"]]
        return
    case.diagnosis = [own, *case.diagnosis]
    if case.verdict in ACCEPTING and mode == "sim":  # an NPU's own compare measured what ran:
        case.verdict = v.SUSPECT_FAKE_PASS
        case.verdict_reason = f"accepted on graph evidence with compiler passes off ({text}): the gym's rule S8"
