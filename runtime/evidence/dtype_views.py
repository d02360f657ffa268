"""In the job process: dtype views of a partially valid tensor, which pypto 0.2.0's calculator gets wrong.

`pypto.view(t, dtype=...)` reinterprets a tile's bytes as another dtype. When `t`'s valid shape is partial in
its last dimension (an int8 `[s2, 32]` with valid shape `[V, 16]` viewed as fp32), the graph-verify calculator
keeps only the first V * 16 / 32 rows of the view and zeroes the rest, silently (docs/pypto.md §3,
`python docs/repro/dtype_view.py`). Every value downstream of such a view is the calculator's error, not the
kernel's, so graph evidence of a case whose kernel builds one is not trusted (docs/realops.md §9).

The view is seen where pypto builds it: the tensor graph's `View(tensor, dtype)` call, with the operand's valid
shape as pypto holds it. The lowered program (`program.json`, `pypto_impl.Dump()`) shows the dtype change as a
`TILE_VIEW` but by then the valid shape is a runtime symbol, so it cannot tell a partial view from a full one.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

RULE = "graph-verify-dtype-view-partial"
EVENT = "dtype_view_partial"
_HARNESS_DIR = str(Path(__file__).resolve().parents[1])  # runtime/


def install(rec: Any) -> None:
    """Watch pypto's dtype views in this job (before the seal, runtime/fence/integrity.py); while
    `rec.watch_calculator_limits` is on, each one found is an event naming the kernel being built."""
    from pypto import pypto_impl

    original = pypto_impl.View
    if getattr(original, "_crosscheck_dtype_views", False):
        return
    seen: set[tuple[str, str]] = set()

    def view(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if rec.watch_calculator_limits and len(args) == 2 and not kwargs and isinstance(args[1], pypto_impl.DataType):
            try:
                found = partial_view(args[0], args[1])
            except Exception:  # noqa: BLE001 - never break the kernel's build over a note
                found = None
            if found is not None:
                emit_once(rec, seen, EVENT, found)
        return out

    view._crosscheck_dtype_views = True  # type: ignore[attr-defined]
    pypto_impl.View = view


def partial_view(operand: Any, dtype: Any) -> dict[str, Any] | None:
    """The operand's shapes when a view to `dtype` reinterprets bytes of a tensor partially valid in its last dim."""
    before = operand.GetDataType()
    if before == dtype:
        return None
    shape = [int(d) for d in operand.GetShape()]
    valid = [_dim(v) for v in operand.GetValidShape()]
    if not shape or len(valid) != len(shape) or valid[-1] == shape[-1]:
        return None
    return {"shape": shape, "valid_shape": valid, "from_dtype": _name(before),
            "to_dtype": _name(dtype)}


def _dim(value: Any) -> int | str:
    """A valid-shape entry: its number when pypto knows it, else its expression (which may be partial)."""
    if isinstance(value, int):
        return value
    if value.ConcreteValid():
        return int(value.Concrete())
    return str(value.Dump())


def _name(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def emit_once(rec: Any, seen: set[tuple[str, str]], event: str, found: dict[str, Any]) -> None:
    """One event per kernel and source line, naming both (the limits' notes, runtime/evidence/calculator_limits.py)."""
    found["kernel"] = rec.in_kernel or ""
    found["where"] = caller(3)
    key = (found["kernel"], found["where"])
    if key not in seen:
        seen.add(key)
        rec.events.emit(event, **found)


def caller(depth: int = 2) -> str:
    """The first frame outside pypto and this harness: the kernel source line that asked for the view."""
    import pypto

    skip = (str(Path(pypto.__file__).parent), _HARNESS_DIR)
    frame = sys._getframe(depth)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(skip):
            return f"{Path(path).name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def reason(found: list[dict[str, Any]]) -> str:
    """One line naming the view and what it does to graph evidence."""
    first = found[0]
    valid = ", ".join(str(d) if isinstance(d, int) else "runtime" for d in first["valid_shape"])
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    maybe = "" if isinstance(first["valid_shape"][-1], int) else "its valid last dimension is known only at run time; if partial, "
    return (f"{first['kernel'] or 'a kernel'} views a {first['from_dtype']} tensor {first['shape']} with valid shape "
            f"[{valid}] as {first['to_dtype']} at {first['where'] or 'its source'}{more}: {maybe}pypto 0.2.0's "
            "graph-verify calculator zeroes the rows of such a view past its first valid bytes, so the graph's values "
            f"are not evidence ({RULE}, docs/realops.md §9)")
