"""In the job process: notice when the submission edits the harness's code (docs/SECURITY.md).

The kernel runs in the interpreter that also holds our instrumentation, so it can replace
`pypto.frontend.jit`, our jit wrapper, any function of a `runtime` module (or the module
itself in `sys.modules`), or a function or method of pypto's own Python that runs inside a
launch after the graph wrote the outputs (`JitCallableWrapper._run_with_cpu`). `seal()` records
who each of them is before the submission is imported; `check()` at the end of the case names
what changed, and the job reports it as an `integrity` event. A job whose report shows a change is never accepted (runtime.verdicts).

This raises the cost of forging, it cannot rule it out: code that knows this module can undo
its edits before the check or edit the seal. The evidence the verdict rests on is checked
outside the job (runtime.evidence.evidence); this catches the edits on the way there.
"""
from __future__ import annotations

import inspect
import os
import sys
import types
from typing import Any

_sealed: dict[str, tuple[int, ...]] = {}


def _fingerprint(name: str, obj: Any) -> tuple[int, ...]:
    """Identity of an object and, for a function, of its code, defaults and closure contents.

    pypto's closures hold state that changes as it runs (`@_count_calls` counts in a cell), so
    for pypto's functions the closure's cells are watched, not what they hold."""
    parts = [id(obj)]
    code = getattr(obj, "__code__", None)
    if code is not None:
        parts += [id(code), id(getattr(obj, "__defaults__", None)), id(getattr(obj, "__kwdefaults__", None))]
        if name.startswith("pypto"):
            parts += [id(cell) for cell in getattr(obj, "__closure__", None) or ()]
            return tuple(parts)
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                parts.append(id(cell.cell_contents))
            except ValueError:  # an empty cell
                parts.append(0)
    return tuple(parts)


def _watched() -> dict[str, Any]:
    """Every object whose replacement would change what the harness measures in this process."""
    import numpy.testing
    import pypto.frontend
    import torch
    from pypto.frontend.parser.entry import JitCallableWrapper

    objects: dict[str, Any] = {
        "pypto.frontend.jit": pypto.frontend.jit,
        "pypto.frontend.parser.entry.JitCallableWrapper.__call__": JitCallableWrapper.__call__,
        "numpy.testing.assert_allclose": numpy.testing.assert_allclose,
        "torch.testing.assert_close": torch.testing.assert_close,
        "os.write": os.write,
    }
    for name, module in list(sys.modules.items()):
        ours = name == "runtime" or name.startswith("runtime.")
        if not ours and name != "pypto" and not name.startswith("pypto."):
            continue
        objects[f"sys.modules[{name!r}]"] = module
        for attr, value in list(vars(module).items()):
            if attr.startswith("__"):
                continue
            if isinstance(value, types.ModuleType) or (inspect.isfunction(value) and value.__module__ == name):
                objects[f"{name}.{attr}"] = value
            elif callable(value) and not inspect.isclass(value):
                # the references runtime.evidence.rawbytes captured; pypto's native functions (pypto_impl)
                objects[f"{name}.{attr}"] = value
            elif inspect.isclass(value) and value.__module__ == name:
                objects[f"{name}.{attr}"] = value
                for method, fn in list(vars(value).items()):
                    if inspect.isfunction(fn):
                        objects[f"{name}.{attr}.{method}"] = fn
    return objects


def seal() -> None:
    """Record the watched objects; call after our own patches and before any submission code.

    Harness code that legitimately replaces a watched object later in the job must seal again
    right after, or honest jobs would be reported as edited.
    """
    _sealed.clear()
    _sealed.update({name: _fingerprint(name, obj) for name, obj in _watched().items()})


def check() -> dict[str, Any]:
    """{"ok": bool, "changed": [names]}: what differs from the seal (new names are not counted)."""
    if not _sealed:
        return {"ok": False, "changed": ["the seal was never taken"]}
    try:
        now = {name: _fingerprint(name, obj) for name, obj in _watched().items()}
    except Exception as exc:  # noqa: BLE001 - an import the submission broke is itself a change
        return {"ok": False, "changed": [f"checking failed: {type(exc).__name__}: {exc}"[:500]]}
    changed = sorted(name for name, fp in _sealed.items() if now.get(name) != fp)
    return {"ok": not changed, "changed": changed[:50]}
