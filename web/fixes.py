"""What a stored diagnosis rule id means and how to fix it, from the rule base (runtime/judge/rules/diagnosis.toml)
and the verdict's own diagnoses (runtime.judge.verdict_diagnoses): pages that list failures show the fix without
loading each case's full report."""
from __future__ import annotations

import functools
from typing import Any

from runtime.judge import diagnose, verdict_diagnoses
from runtime import vocabulary


@functools.lru_cache(maxsize=1)
def _texts() -> dict[str, dict[str, str]]:
    out = {r.id: {"rule": r.id, "cause": r.cause, "fix": r.fix} for r in diagnose.load_rules()}
    for d in (verdict_diagnoses.GOLDEN_FALLBACK, verdict_diagnoses.not_written({})):
        out[d.rule] = {"rule": d.rule, "cause": d.cause, "fix": d.fix}
    return out


def explain(rules: str | None) -> dict[str, Any] | None:
    """The first rule of a stored list that explains the failure (noise never does), with its cause and
    fix; None when none does. An unknown id (a rule since renamed) still names itself."""
    shown = vocabulary.explaining_rules(rules)
    if not shown:
        return None
    return _texts().get(shown[0], {"rule": shown[0], "cause": "", "fix": ""})
