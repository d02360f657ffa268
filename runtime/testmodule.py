"""Test modules as cases: import a test file as a module and call one `test_*` function (docs/realops.md §4).

The module is imported under its own name, so its `if __name__ == "__main__"` block does not run;
the function gets the arguments it names that a real checkout's tests take: `device`, `run_mode`, `case`.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Any

CASE_FILE = "test_cases.json"


class TestFailed(AssertionError):
    """The test function returned False: the gym's way of saying a level failed."""


class CannotCall(TypeError):
    """The test function needs an argument the harness cannot supply."""


def test_functions(path: Path) -> list[str]:
    """Top-level `test_*` functions of a file, in file order, read without importing it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def answers_list(path: Path) -> bool:
    """Whether the file takes `--list` (then its listing gives the cases, as for example scripts)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    return any(isinstance(n, ast.Constant) and n.value == "--list" for n in ast.walk(tree))


def takes_run_mode(path: Path) -> bool:
    """Whether the file names a `--run_mode`/`--run-mode` option (a script without one rejects it)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return True
    names = {"--run_mode", "--run-mode"}
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split("=")[0] in names
               for n in ast.walk(tree))


def call(script: Path, function: str, mode: str, device: str) -> None:
    """Import `script` and call `function`; raises what it raises, TestFailed when it returns False."""
    spec = importlib.util.spec_from_file_location(script.stem, script)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {script.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise AttributeError(f"{script.name} has no function {function!r}")
    kwargs = arguments(fn, function, mode, device, script.parent / CASE_FILE)
    if fn(**kwargs) is False:
        raise TestFailed(f"{function} returned False")


def arguments(fn: Any, function: str, mode: str, device: str, case_file: Path) -> dict[str, Any]:
    """Values for the parameters a test function names; the ones with defaults keep them."""
    supplied: dict[str, Any] = {"device": device, "run_mode": mode}
    kwargs: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name in supplied:
            kwargs[name] = supplied[name]
        elif name == "case":
            kwargs[name] = _case_for(function, case_file)
        elif param.default is param.empty:
            raise CannotCall(f"{function}() needs an argument {name!r} that crosscheck cannot supply "
                             "(it passes device, run_mode and case)")
    return kwargs


def _case_for(function: str, case_file: Path) -> dict[str, Any] | None:
    """The test_cases.json entry whose id is the function's name without `test_`, else the first."""
    try:
        cases = json.loads(case_file.read_text(encoding="utf-8"))["test_cases"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    wanted = function.removeprefix("test_")
    return next((c for c in cases if isinstance(c, dict) and str(c.get("id")) == wanted),
                cases[0] if cases else None)
