"""Graphs pypto 0.2.0's calculator computes wrongly, noted as the kernel is built (docs/realops.md §9).

Each limit names its rule, the event the job emits and the key its notes go under in `graph_verify`.
"""
from __future__ import annotations

from typing import Any

from runtime.evidence import dtype_views, loop_carried

LIMITS = ((dtype_views, "dtype_views"), (loop_carried, "loop_reshapes"))
RULES = tuple(module.RULE for module, _ in LIMITS)
KEYS = tuple(key for _, key in LIMITS)


def set_aside(graph: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Graph evidence replaced by `unsupported` under the first limit the events note, what it said kept."""
    for module, key in LIMITS:
        notes = [{k: v for k, v in e.items() if k != "event"} for e in events if e.get("event") == module.EVENT][:20]
        if notes:
            return {"status": "unsupported", "rule": module.RULE, "metrics": None, "reason": module.reason(notes),
                    key: notes, "set_aside": {k: graph.get(k) for k in ("status", "reason", "metrics")}}
    return None
