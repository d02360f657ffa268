"""Version-skew rules: pypto names and calls that the installed pypto lacks or spells differently.

The installed pypto's public API comes from runtime.devices.pypto_api (introspected once per install); the
checks only read it. A name counts as missing when its parent is a pypto module or class that this
pypto introspected and the leaf is not among its public names (docs/versions.md §1).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from runtime.lint.module import Module
from runtime.lint.rules import API_MISSING, CALL_MISMATCH, Findings

if TYPE_CHECKING:  # the lint imports no other runtime module (tests/runtime/test_lint.py)
    from runtime.devices.pypto_api import PyptoApi

POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


def check_api(m: Module, f: Findings, api: PyptoApi) -> None:
    """Flag pypto names the installed pypto lacks, and pypto calls its signatures refuse."""
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Attribute):  # inner chains repeat the outer one's finding, kept once
            _attribute(m, f, api, node)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pypto" and not node.level:
            _import_from(f, api, node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pypto.") and not _module_exists(api, alias.name):
                    _missing(f, api, node.lineno, alias.name)
        elif isinstance(node, ast.Call):
            name = m.resolve(node.func)
            if name and name in api.signatures:
                _call(f, api, node, name, api.signatures[name])


def _attribute(m: Module, f: Findings, api: PyptoApi, node: ast.Attribute) -> None:
    name = m.resolve(node)
    if name is None or not name.startswith("pypto."):
        return
    missing = first_missing(api, name)
    if missing:
        _missing(f, api, node.lineno, missing)


def first_missing(api: PyptoApi, name: str) -> str | None:
    """The shortest prefix of `name` that this pypto lacks (`pypto.PrecisionType` for
    `pypto.PrecisionType.INTRINSIC`), or None; names below a function or value are not checked."""
    parts = name.split(".")
    prefix = parts[0]
    for part in parts[1:]:
        kind = api.kind(prefix)
        if kind not in ("module", "class"):
            return None
        owner = api.modules[prefix] if kind == "module" else api.classes[prefix]
        candidate = f"{prefix}.{part}"
        # Dunders (`__path__`, `__file__`, `__version__`) belong to every module and class, in every pypto:
        # the introspected public names leave them out, and they never say which pypto the code targets.
        if part.startswith("__") and part.endswith("__"):
            return None
        if part not in owner and not (kind == "module" and candidate in api.submodules):
            return candidate
        prefix = candidate
    return None


def _module_exists(api: PyptoApi, name: str) -> bool:
    return name in api.modules or name in api.submodules


def _import_from(f: Findings, api: PyptoApi, node: ast.ImportFrom) -> None:
    module = node.module or "pypto"
    if not _module_exists(api, module):
        _missing(f, api, node.lineno, first_missing(api, module) or module)
        return
    names = api.modules.get(module)
    if names is None:
        return  # a submodule that `import pypto` does not load: its names were not introspected
    for alias in node.names:
        full = f"{module}.{alias.name}"
        if alias.name != "*" and alias.name not in names and full not in api.submodules:
            _missing(f, api, node.lineno, full)


def _missing(f: Findings, api: PyptoApi, line: int, name: str) -> None:
    f.add(API_MISSING, line,
          f"pypto {api.version} has no `{name}`: this code was written for another pypto (a newer build has it). "
          "It will fail here; run it with the pypto it was written for (docs/versions.md).", subject=name)


def _call(f: Findings, api: PyptoApi, call: ast.Call, name: str, sig: dict[str, Any]) -> None:
    params = sig["params"]
    positional = [p["name"] for p in params if p["kind"] in POSITIONAL]
    by_name = {p["name"]: p for p in params}
    where = f"pypto {api.version}'s `{name}`"
    if not sig["varargs"] and not any(isinstance(a, ast.Starred) for a in call.args) and \
            len(call.args) > len(positional):
        f.add(CALL_MISMATCH, call.lineno,
              f"{where} takes at most {len(positional)} positional argument(s) ({', '.join(positional) or 'none'}); "
              f"this call passes {len(call.args)}: written for another pypto? (docs/versions.md)",
              subject=f"{name}(... {len(call.args)} positional arguments)")
    for kw in call.keywords:
        if kw.arg is None:
            continue
        param = by_name.get(kw.arg)
        if param is None or param["kind"] == "POSITIONAL_ONLY":
            if not sig["varkw"]:
                f.add(CALL_MISMATCH, kw.value.lineno,
                      f"{where} has no parameter `{kw.arg}` (its parameters: {', '.join(by_name) or 'none'}): "
                      "written for another pypto? (docs/versions.md)", subject=f"{name}({kw.arg}=...)")
            continue
        key = _dict_key_mismatch(param["annotation"], kw.value)
        if key is not None:
            f.add(CALL_MISMATCH, kw.value.lineno,
                  f"{where} takes `{kw.arg}` as {param['annotation']}; this call passes a dict keyed by str "
                  f"({key!r}), which pypto cannot convert ('Unable to cast Python instance of type <class 'dict'>'): "
                  "written for another pypto? (docs/versions.md)", subject=f"{name}({kw.arg}={{{key!r}: ...}})")


def _dict_key_mismatch(annotation: str, value: ast.expr) -> str | None:
    """The first str key of a dict literal passed where this pypto takes Dict[int, ...]."""
    if not isinstance(value, ast.Dict) or "Dict[int," not in annotation.replace("dict[", "Dict["):
        return None
    for key in value.keys:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None
