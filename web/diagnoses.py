"""An operator's diagnoses, each said once: its cases grouped by what is wrong with them and what to do.

Cases with the same outcome, verdict, diagnosis rules and reason share one group (three cases of one SIM
garbage, or one tile-shape error in every parametrisation, read once), worst outcome first; the operator page
opens on these (docs/dashboard.md §7).
"""
from __future__ import annotations

import re
from typing import Any

from runtime import exit_codes, vocabulary
from server.services import combined
from web import fixes

NAMED = 8  # cases named in a group; the rest counted
ERROR_CHARS = 300
# The combined verdict's terse reason for a mode that did not run the kernel (server.services.combined):
# "SIM: not_run", "NPU: crash, SIM: timeout". The page says what stopped it instead.
TERSE = re.compile(r"(?:SIM|NPU): [a-z_]+(?:, SIM: [a-z_]+)?")


def what(case: dict[str, Any]) -> str:
    """Each mode's latest verdict in words, its stage included: 'SIM: not run (an argument crosscheck cannot
    supply)'."""
    return " · ".join(f"{mode.upper()}: {vocabulary.detail(r.verdict, r.stage or '')}"
                      for mode in ("sim", "npu") if (r := case.get(mode)) is not None and r.verdict)


def why(case: dict[str, Any]) -> str:
    """Why the case got its verdict: the combined reason, or, where that only names a verdict id or (not judged)
    the stage that `what` names already, the error that stopped the mode."""
    reason = case.get("reason") or ""
    terse = bool(TERSE.fullmatch(reason))
    if not terse and case.get("combined_verdict") != combined.NOT_JUDGED:
        return reason
    errors = [f"{r.error_type}: {r.error_message}" if r.error_type else r.error_message
              for mode in ("sim", "npu") if (r := case.get(mode)) is not None and r.error_message]
    text = "; ".join(errors) or (what(case) if terse else reason)
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS - 1] + "…"


def group(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The groups of an operator's case rows (queries.case_summaries, web.overview.case_rows)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for c in cases:
        rules = tuple(vocabulary.explaining_rules((c["sim"].diagnosis_rules or "") if c.get("sim") else ""))
        key = (c.get("outcome"), c["combined_verdict"], rules, c.get("reason") or "", what(c))
        g = groups.get(key)
        if g is None:
            d = fixes.explain(" ".join(rules)) if rules else None
            g = groups[key] = {"outcome": c.get("outcome"), "verdict": c["combined_verdict"], "rules": list(rules),
                               "what": what(c),
                               "cause": (d or {}).get("cause", ""), "fix": (d or {}).get("fix", ""),
                               "why": why(c), "cases": []}
        g["cases"].append(c)
    rank = {o: i for i, o in enumerate(exit_codes.OUTCOMES)}
    ordered = sorted(groups.values(), key=lambda g: rank.get(g["outcome"], len(rank)))
    for n, g in enumerate(ordered, 1):
        g.update(n=n, named=g["cases"][:NAMED], more=len(g["cases"]) - NAMED if len(g["cases"]) > NAMED else 0)
        for c in g["cases"]:
            c["diagnosis_group"] = n
    return ordered
