"""In the job process: reshapes of a loop-carried local tensor inside the loop, which pypto 0.2.0's calculator gets wrong.

A kernel makes a local tensor (`buf = pypto.tensor(...)`) before a `pypto.loop`, writes one block of it per
iteration (`pypto.assemble`) and reshapes it inside the loop (`out[:] = pypto.reshape(buf, ..., inplace=True)`,
or without `inplace`). The graph-verify calculator does not carry the local tensor across iterations: each
iteration's reshape sees only that iteration's block, the rest zero, and the last iteration's copy is the
output (docs/pypto.md §3, `python docs/repro/loop_inplace_reshape.py`). Every value read that way is the
calculator's, not the kernel's, so graph evidence of a case whose kernel builds one is not trusted
(docs/realops.md §9).

Seen where pypto builds it: `pypto_impl.Reshape` inside a `pypto.loop` (the scope pypto's `_loop_function`
opens and closes) on a tensor that `pypto.tensor` made in the same kernel outside that loop and that the loop
writes (`pypto_impl.Assemble` into it, as `pypto.assemble` and slice assignment do). A kernel input or a tensor
only read in the loop is not carried state: reshaping it there is computed right (glm_attention in §9). Code outside any
explicit loop sits in pypto's own default loop, split into hidden functions at each loop, so the function
pypto is building cannot tell "before the loop" from "in it"; the scopes can.
"""
from __future__ import annotations

import sys
from typing import Any

from runtime.evidence.dtype_views import emit_once

RULE = "graph-verify-loop-carried-reshape"
EVENT = "loop_carried_reshape"


def install(rec: Any) -> None:
    """Watch local tensors and reshapes in this job (before the seal, runtime/fence/integrity.py); while
    `rec.watch_calculator_limits` is on, each reshape found is an event naming the kernel being built."""
    from pypto import pypto_impl
    from pypto.tensor import Tensor

    original, assemble_ = pypto_impl.Reshape, pypto_impl.Assemble
    if getattr(original, "_crosscheck_loop_carried", False):
        return
    loops: list[int] = []  # the explicit loops being built, innermost last
    count = [0]
    made: dict[int, tuple[str, tuple[int, ...]]] = {}  # tensor id -> (kernel, the loops pypto.tensor made it in)
    written: dict[int, set[int]] = {}  # tensor id -> the loops it was written in
    seen: set[tuple[str, str]] = set()
    begin, end, init = pypto_impl.BeginScope, pypto_impl.EndScope, Tensor.__init__

    def begin_scope(*args: Any, **kwargs: Any) -> Any:
        is_loop = sys._getframe(1).f_code.co_name == "_loop_function"
        out = begin(*args, **kwargs)
        count[0] += 1
        loops.append(count[0] if is_loop else 0)  # 0: an options scope, not a loop
        return out

    def end_scope(*args: Any, **kwargs: Any) -> Any:
        if loops:
            loops.pop()
        return end(*args, **kwargs)

    def tensor_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if rec.watch_calculator_limits:
            try:
                made[self._base.Id()] = (rec.in_kernel or "", tuple(loop for loop in loops if loop))
            except Exception:  # noqa: BLE001 - never break the kernel's build over a note
                pass

    def assemble(*args: Any, **kwargs: Any) -> Any:
        out = assemble_(*args, **kwargs)
        if rec.watch_calculator_limits and len(args) >= 2:
            try:
                dst = args[1] if isinstance(args[0], (list, tuple)) else args[2]  # ([(src, offsets)...], dst) or (src, offsets, dst)
                written.setdefault(dst.Id(), set()).update(loop for loop in loops if loop)
            except Exception:  # noqa: BLE001
                pass
        return out

    def reshape(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if rec.watch_calculator_limits and args and isinstance(args[0], pypto_impl.Tensor):
            try:
                inner = next((loop for loop in reversed(loops) if loop), None)
                found = carried(args[0], made.get(args[0].Id()), rec.in_kernel or "", inner,
                                written.get(args[0].Id(), set()))
            except Exception:  # noqa: BLE001
                found = None
            if found is not None:
                emit_once(rec, seen, EVENT, found)
        return out

    reshape._crosscheck_loop_carried = True  # type: ignore[attr-defined]
    pypto_impl.Reshape = reshape
    pypto_impl.Assemble = assemble
    pypto_impl.BeginScope = begin_scope
    pypto_impl.EndScope = end_scope
    Tensor.__init__ = tensor_init  # type: ignore[method-assign]


def carried(operand: Any, made_in: tuple[str, tuple[int, ...]] | None, kernel: str, inner: int | None,
            written_in: set[int]) -> dict[str, Any] | None:
    """The operand's name and shape when a loop reshapes a local tensor made outside that loop and written in it."""
    if made_in is None or inner is None or made_in[0] != kernel or inner in made_in[1] or inner not in written_in:
        return None
    return {"tensor": str(operand.GetName()), "shape": [int(d) for d in operand.GetShape()]}


def reason(found: list[dict[str, Any]]) -> str:
    """One line naming the reshape and what it does to graph evidence."""
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    name = f"'{first['tensor']}' " if first.get("tensor") else ""
    return (f"{first['kernel'] or 'a kernel'} reshapes the local tensor {name}{first['shape']}, made before its loop "
            f"and written in it, inside the loop at {first['where'] or 'its source'}{more}: pypto 0.2.0's graph-verify "
            "calculator does not carry such a tensor across iterations (each reshape sees only its own iteration's "
            f"writes, the rest zero), so the graph's values are not evidence ({RULE}, docs/realops.md §9)")
