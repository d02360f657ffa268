"""In the job: pypto options at each launch that change what runs, against the job's stock ones (docs/kernelbench.md §3, S8).

`host.compile_stage` short of ALL_COMPLETE stops compiling before anything executes; `disable_pass` turns the
compiler's passes off. Either makes graph verify (which checks the tensor graph) stand for a kernel other than the
one that runs. Read from `pypto.get_options_tree()` (about 1.4 ms) and from the kernel's own `host_options`.
"""
from __future__ import annotations

from typing import Any

WHAT_RUNS = ("compile_stage", "disable_pass")  # option names, matched on the last part of the key
MAX_KEYS = 10


def _tree() -> dict[str, str]:
    import pypto

    found: dict[str, str] = {}
    for line in pypto.get_options_tree().splitlines():
        key, sep, value = line.strip().partition(": ")
        if sep and key.rsplit(".", 1)[-1] in WHAT_RUNS:
            found[key] = value.strip()  # an inner scope's line comes later and wins
    return found


def _skips(key: str, value: str) -> bool:
    """True when this value of a what-runs option skips work (stock: compile everything, every pass on)."""
    if key.endswith("compile_stage"):
        return value.rsplit(".", 1)[-1] not in ("0", "ALL_COMPLETE", "None")
    return value not in ("0", "false", "False")


class Watch:
    """Reports, at each launch, the what-runs options that skip work and differ from those the job started with."""

    def __init__(self, rec: Any) -> None:
        self.rec = rec
        self.stock = _tree()

    def before_launch(self, wrapper: Any, tensors: list[Any]) -> None:
        changed = {k: v for k, v in _tree().items() if self.stock.get(k) != v and _skips(k, v)}
        own = getattr(wrapper, "_host_options", None)
        if isinstance(own, dict) and own.get("compile_stage") is not None and _skips("compile_stage", str(own["compile_stage"])):
            changed["jit host_options.compile_stage"] = str(own["compile_stage"])
        if changed:
            self.rec.events.emit("run_options", index=len(self.rec.launches), kernel=getattr(wrapper, "__name__", "kernel"),
                                 changed=dict(list(changed.items())[:MAX_KEYS]))


def install(rec: Any) -> None:
    """Watch every observed launch of this job (runtime.evidence.instrument's before_launch hooks)."""
    rec.before_launch.append(Watch(rec).before_launch)
