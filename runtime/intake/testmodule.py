"""Test modules as cases: import a test file as a module and call one `test_*` function (docs/realops.md §4).

The module is imported under its own name, so its `if __name__ == "__main__"` block does not run;
the function gets the arguments it names that a real checkout's tests take: `device`, `device_id`, `run_mode`,
`case`, and each argument set its `@pytest.mark.parametrize` marks give. A function its author marked
`@pytest.mark.skip` / `@unittest.skip` is not run unless asked for by name.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import sys
from dataclasses import dataclass
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


def skip_marks(path: Path) -> dict[str, str]:
    """Top-level `test_*` functions marked skip unconditionally, with the mark's reason (docs/realops.md §10).

    `@pytest.mark.skip`, `@pytest.mark.skip(reason=...)`, `@unittest.skip("...")`: pytest never runs them. A
    `skipif(condition)` is not evaluated here (its condition may read the host): such a function runs.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return {}
    marks: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if not (isinstance(target, ast.Attribute) and target.attr == "skip"):
                continue
            args = [*deco.args, *(k.value for k in deco.keywords if k.arg == "reason")] \
                if isinstance(deco, ast.Call) else []
            reason = next((a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)), "")
            marks[node.name] = reason
    return marks


def answers_list(path: Path) -> bool:
    """Whether the file takes `--list` (then its listing gives the cases, as for example scripts)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    return any(isinstance(n, ast.Constant) and n.value == "--list" for n in ast.walk(tree))


RUN_MODE_OPTIONS = ("--run_mode", "--run-mode")


def strict_argparse(path: Path) -> bool:
    """Whether the file parses its arguments with argparse's `parse_args`: an option it does not name exits 2."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    called = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
              for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return "ArgumentParser" in called and "parse_known_args" not in called


def run_mode_args(path: Path, mode: str) -> list[str]:
    """The run-mode option to give a test file, as it spells it, or none when it would refuse it.

    A file whose argparse (no `parse_known_args`) names no `--run_mode`/`--run-mode` option, or whose option
    lists `choices` without this mode (`choices=["npu"]`), gets none: `parse_args` would exit 2 on it. Files
    that read sys.argv themselves take `--run_mode MODE`, as the hicann/pypto examples do.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return ["--run_mode", mode]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for call in calls:
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and a.value in RUN_MODE_OPTIONS]
        if not flags:
            continue
        choices = next((k.value for k in call.keywords if k.arg == "choices"), None)
        if isinstance(choices, (ast.List, ast.Tuple, ast.Set)):
            allowed = {e.value for e in choices.elts if isinstance(e, ast.Constant)}
            if len(allowed) == len(choices.elts) and mode not in allowed:
                return []
        return [flags[0], mode]
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    spelled = [o for o in RUN_MODE_OPTIONS if o in names]
    if not spelled and strict_argparse(path):
        return []
    return [spelled[0] if spelled else "--run_mode", mode]


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
    sets = parameter_sets(fn)
    for given in [{}] if sets is None else sets:  # pytest runs each parameter set; the first failure ends the case
        kwargs = arguments(fn, function, mode, device, script.parent / CASE_FILE, given)
        if fn(**kwargs) is False:
            raise TestFailed(f"{function}({_shown(given)}) returned False" if given else f"{function} returned False")


def parameter_sets(fn: Any) -> list[dict[str, Any]] | None:
    """The argument sets `@pytest.mark.parametrize` gives a test function, as pytest runs them (the product of
    stacked marks, `pytest.param(..., marks=pytest.mark.skip)` left out); None when it has no such mark
    (docs/realops.md §10). Read from the marks pytest's decorator leaves on the function: no pytest needed."""
    marks = [m for m in getattr(fn, "pytestmark", None) or [] if getattr(m, "name", "") == "parametrize"]
    if not marks:
        return None
    sets: list[dict[str, Any]] = [{}]
    for mark in marks:
        args, kw = list(getattr(mark, "args", ())), dict(getattr(mark, "kwargs", {}) or {})
        names = args[0] if args else kw.get("argnames", "")
        values = args[1] if len(args) > 1 else kw.get("argvalues", [])
        names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
        rows = []
        for value in values:
            if hasattr(value, "values") and hasattr(value, "marks"):  # pytest.param(...)
                if any(getattr(m, "name", "") == "skip" for m in value.marks):
                    continue
                row = list(value.values)
            else:
                row = [value] if len(names) == 1 else list(value)
            rows.append(dict(zip(names, row)))
        sets = [{**done, **row} for done in sets for row in rows]
    return sets


def _shown(given: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}"[:80] for k, v in given.items())


def arguments(fn: Any, function: str, mode: str, device: str, case_file: Path,
              given: dict[str, Any] | None = None) -> dict[str, Any]:
    """Values for the parameters a test function names; the ones with defaults keep them.

    `device_id` is the card's index (`npu:3` -> 3), as the gym's `main()` passes `int(TILE_FWK_DEVICE_ID)`.
    """
    index = device.rpartition(":")[2]
    supplied: dict[str, Any] = {"device": device, "device_id": int(index) if index.isdigit() else 0,
                                "run_mode": mode}
    kwargs: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if given and name in given:  # a parametrize value wins over ours (the gym's `case`)
            kwargs[name] = given[name]
        elif name in supplied:
            kwargs[name] = supplied[name]
        elif name == "case":
            kwargs[name] = _case_for(function, case_file)
        elif param.default is param.empty:
            raise CannotCall(f"{function}() needs an argument {name!r} that crosscheck cannot supply "
                             "(it passes device, device_id, run_mode and case)")
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


@dataclass(frozen=True)
class TestFunction:
    """A `test_*` function of a test module: one case."""
    name: str


@dataclass(frozen=True)
class SkippedFunction:
    """A `test_*` function its author marked skip: a case reported, not run (docs/realops.md §10)."""
    name: str
    reason: str
