"""Compare two suite runs case by case: regressions, fixes, new and vanished cases, new SIM-garbage flags.

A case is one operator x case x mode. The gate counts kernel defects only (runtime.vocabulary: the
outcome `failed`): it **regressed** when
- it is now a kernel defect and was not one before, or it was one and now fails more severely
  (precision_fail -> crash); or
- its graph-verify diff (SIM) or NPU diff grew more than 10x while staying finite (both runs
  measured a non-zero, finite diff).
A case that became infrastructure or harness, or cannot be judged here (a SIM limit, a reference only
an NPU computes, a fixture we cannot supply), is listed as changed, never as a regression.
It is **fixed** when it was not acceptable and now is, by a verified result (an unverified upload's
pass is listed as changed; new flags ignore unverified results too). Other verdict changes (e.g. graph verify
becoming unavailable: sim_garbage_graph_ok -> sim_output_unwritten) are listed as changed.
The raw SIM diff is never compared: on CPU hosts it is leftover memory (docs/ci.md).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from runtime import verdicts, vocabulary
from server.services import combined

DIFF_GROWTH = 10.0
# Failing verdicts, most severe first (a change towards the front is a regression).
FAILING_ORDER = (verdicts.SUSPECT_FAKE_PASS, verdicts.CRASH, verdicts.TIMEOUT, verdicts.STRUCTURAL_ERROR,
                 verdicts.GRAPH_FAIL, verdicts.PRECISION_FAIL, verdicts.VERSION_SKEW, verdicts.NOT_RUN)

Key = tuple[str, str, str]  # operator, case, mode


@dataclass(frozen=True)
class CaseOutcome:
    """What a suite run says about one case (its latest attempt)."""
    verdict: str | None  # None while pending
    max_abs_diff: float | None = None
    graph_max_abs_diff: float | None = None
    diagnosis_rules: str = ""
    verified: bool = True  # False: uploaded without a device (or versions); it proves nothing acceptable
    stage: str = ""  # what a not_run's outcome hangs on (runtime.exit_codes.TABLE)


@dataclass
class Change:
    operator: str
    case: str
    mode: str
    before: str | None
    after: str | None
    why: str
    outcome_before: str = ""  # the outcomes in words (runtime.vocabulary), for pages and webhooks
    outcome_after: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "case": self.case, "mode": self.mode, "before": self.before,
                "after": self.after, "why": self.why, "outcome_before": self.outcome_before,
                "outcome_after": self.outcome_after}


@dataclass
class Comparison:
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    new: list[Change] = field(default_factory=list)
    vanished: list[Change] = field(default_factory=list)
    new_flags: list[Change] = field(default_factory=list)  # cases newly flagged sim_garbage_*
    unchanged: int = 0

    def counts(self) -> dict[str, int]:
        return {"regressions": len(self.regressions), "fixes": len(self.fixes), "changed": len(self.changed),
                "new": len(self.new), "vanished": len(self.vanished), "new_flags": len(self.new_flags),
                "unchanged": self.unchanged}

    def as_dict(self, limit: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"counts": self.counts()}
        for name in ("regressions", "fixes", "changed", "new", "vanished", "new_flags"):
            items: list[Change] = getattr(self, name)
            out[name] = [c.as_dict() for c in items[:limit]]
        return out


def _severity(verdict: str | None, mode: str, stage: str = "") -> int:
    """0 = not a kernel defect (acceptable, infrastructure or harness, cannot judge here); higher = more
    severe defect; pending counts as nothing to compare."""
    if verdict is None or vocabulary.outcome(verdict, mode, stage) != vocabulary.FAILED:
        return 0
    if verdict in FAILING_ORDER:
        return len(FAILING_ORDER) - FAILING_ORDER.index(verdict)
    return len(FAILING_ORDER) + 1  # an unknown verdict: treat as the worst


def _finite_positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def diff_growth(before: CaseOutcome, after: CaseOutcome, mode: str) -> str | None:
    """Why a diff grew more than DIFF_GROWTH x (graph verify in SIM, the hardware on the NPU), or None."""
    pairs = ([("graph-verify diff", before.graph_max_abs_diff, after.graph_max_abs_diff)] if mode == "sim" else
             [("NPU diff", before.max_abs_diff, after.max_abs_diff)])
    for what, old, new in pairs:
        if _finite_positive(old) and _finite_positive(new) and new > DIFF_GROWTH * old:  # type: ignore[operator]
            return f"{what} grew {new / old:.3g}x ({old:.3g} -> {new:.3g})"  # type: ignore[operator]
    return None


def _change(old: str | None, new: str | None) -> str:
    """'SIM garbage · graph ok → graph fail': a verdict change in words, never the ids."""
    return f"{vocabulary.label(old)} → {vocabulary.label(new)}"


def _evidence(outcome: CaseOutcome, mode: str) -> str:
    """'; graph verify max |diff| 3.2 · diagnosis graph-verify-mismatch': what stands behind a regression,
    never a noise rule (runtime.vocabulary)."""
    parts = [vocabulary.deciding_text(mode, outcome.verdict, outcome.max_abs_diff, outcome.graph_max_abs_diff)]
    rules = vocabulary.explaining_rules(outcome.diagnosis_rules)
    parts.append(f"diagnosis {', '.join(rules)}" if rules else "")
    text = " · ".join(p for p in parts if p)
    return f"; {text}" if text else ""


def compare(before: dict[Key, CaseOutcome], after: dict[Key, CaseOutcome]) -> Comparison:
    """Case-by-case comparison of two runs (pending cases are skipped on either side)."""
    out = Comparison()
    for key in sorted(after.keys() | before.keys()):
        op, case, mode = key
        old, new = before.get(key), after.get(key)
        if new is not None and new.verdict is None or old is not None and old.verdict is None:
            continue
        if old is None:
            assert new is not None
            out.new.append(Change(op, case, mode, None, new.verdict, "new in this run"))
            continue
        if new is None:
            out.vanished.append(Change(op, case, mode, old.verdict, None, "not in this run"))
            continue
        s_old, s_new = _severity(old.verdict, mode, old.stage), _severity(new.verdict, mode, new.stage)
        ok_old = bool(old.verdict and verdicts.acceptable(old.verdict, mode))
        ok_new = bool(new.verdict and verdicts.acceptable(new.verdict, mode))
        grown = diff_growth(old, new, mode)
        if s_new > s_old:
            out.regressions.append(Change(op, case, mode, old.verdict, new.verdict,
                                          _change(old.verdict, new.verdict) + (f"; {grown}" if grown else "")
                                          + _evidence(new, mode)))
        elif grown:
            out.regressions.append(Change(op, case, mode, old.verdict, new.verdict, grown))
        elif not ok_old and ok_new and not new.verified:  # a pass nobody verified fixes nothing
            out.changed.append(Change(op, case, mode, old.verdict, new.verdict,
                                      _change(old.verdict, new.verdict) + " (unverified upload: not a fix)"))
        elif not ok_old and ok_new:
            out.fixes.append(Change(op, case, mode, old.verdict, new.verdict, _change(old.verdict, new.verdict)))
        elif old.verdict != new.verdict:
            word = vocabulary.word(vocabulary.outcome(new.verdict, mode, new.stage))
            not_counted = f" ({word}: not a kernel defect, the gate does not count it)" if s_new == 0 and not ok_new \
                else ""
            out.changed.append(Change(op, case, mode, old.verdict, new.verdict,
                                      _change(old.verdict, new.verdict) + not_counted))
        else:
            out.unchanged += 1
    out.new_flags = new_flags(before, after)
    for change in out.regressions + out.fixes + out.changed + out.new + out.vanished:
        for side, outcome in (("outcome_before", before.get((change.operator, change.case, change.mode))),
                              ("outcome_after", after.get((change.operator, change.case, change.mode)))):
            if outcome is not None and outcome.verdict:
                setattr(change, side, vocabulary.word(vocabulary.outcome(outcome.verdict, change.mode,
                                                                         outcome.stage)))
    return out


def run_flags(outcomes: dict[Key, CaseOutcome]) -> dict[tuple[str, str], str]:
    """(operator, case) -> the sim_garbage_* verdict across modes, for cases this run flags."""
    by_case: dict[tuple[str, str], dict[str, CaseOutcome]] = {}
    for (op, case, mode), o in outcomes.items():
        if o.verified:  # no claim unverified
            by_case.setdefault((op, case), {})[mode] = o
    flags = {}
    for key, modes in by_case.items():
        sim, npu = modes.get("sim"), modes.get("npu")
        verdict, _ = combined.combine(sim.verdict if sim else None, npu.verdict if npu else None,
                                      sim_stage=sim.stage if sim else "", npu_stage=npu.stage if npu else "")
        if verdict in combined.FLAGGED:
            flags[key] = verdict
    return flags


def new_flags(before: dict[Key, CaseOutcome], after: dict[Key, CaseOutcome]) -> list[Change]:
    old, new = run_flags(before), run_flags(after)
    return [Change(op, case, "", old.get((op, case)), flag, f"newly flagged: {vocabulary.label(flag)}")
            for (op, case), flag in sorted(new.items()) if old.get((op, case)) != flag]


def latest(rows: Iterable[Any]) -> dict[Key, CaseOutcome]:
    """Rows with operator, case, mode, attempt, verdict and diffs -> each case's latest attempt."""
    best: dict[Key, tuple[int, CaseOutcome]] = {}
    for r in rows:
        key = (r.operator, r.case, r.mode)
        if key not in best or r.attempt >= best[key][0]:
            best[key] = (r.attempt, CaseOutcome(r.verdict, r.max_abs_diff, r.graph_max_abs_diff,
                                                r.diagnosis_rules or "", getattr(r, "verified", True),
                                                getattr(r, "stage", None) or ""))
    return {k: v for k, (_, v) in best.items()}
