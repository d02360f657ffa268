"""Test files read without running them: module or script, their run-mode option, and what pytest needs
beside a module (docs/realops.md §4).

A test module's cases are the items pytest collects from it, in the job (runtime/job/pytest_run.py); here are
the names of its `test_*` functions (the cases when collection fails, so each case's job shows why), its skip
marks for `--list`, and the files a job needs to run it as pytest would: the `conftest.py` and `__init__.py`
of each folder from the module's up to the checkout root, and the root's pytest config.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.intake import python_ast

CASE_FILE = "test_cases.json"


PYTEST_CONFIGS = {"pytest.ini": "", ".pytest.ini": "", "pyproject.toml": "[tool.pytest", "tox.ini": "[pytest]",
                  "setup.cfg": "[tool:pytest]"}  # a root file holding pytest's config, and the section that says so


# A test function of which pytest collected no item: the checkout's hooks deselected it (another SoC, a card count).
LEFT_OUT = "pytest collected no item of it: the checkout's conftest hooks left it out"


class TestFailed(AssertionError):
    """The test function returned False: the gym's way of saying a level failed."""


class CannotCall(TypeError):
    """The test needs a fixture nobody defines, or pytest collected no item of the name asked for."""


def test_functions(path: Path) -> list[str]:
    """Top-level `test_*` functions of a file, in file order, read without importing it."""
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def skip_marks(path: Path) -> dict[str, str]:
    """Top-level `test_*` functions marked skip unconditionally, with the mark's reason (docs/realops.md §10).

    `@pytest.mark.skip`, `@pytest.mark.skip(reason=...)`, `@unittest.skip("...")`: pytest never runs them. A
    `skipif(condition)` is not evaluated here (its condition may read the host): such a function runs.
    """
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
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
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    return any(isinstance(n, ast.Constant) and n.value == "--list" for n in ast.walk(tree))


RUN_MODE_OPTIONS = ("--run_mode", "--run-mode")


def strict_argparse(path: Path) -> bool:
    """Whether the file parses its arguments with argparse's `parse_args`: an option it does not name exits 2."""
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
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
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
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


@dataclass(frozen=True)
class TestFunction:
    """A `test_*` function of a test module: one case."""
    name: str


@dataclass(frozen=True)
class SkippedFunction:
    """A `test_*` function its author marked skip: a case reported, not run (docs/realops.md §10)."""
    name: str
    reason: str


def item_case(nodeid: str) -> str:
    """A pytest item's case id: its node id without the file (`test_x[a-1]`, `TestGroup::test_y`)."""
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def parametrized(path: Path) -> bool:
    """Whether a top-level `test_*` function carries a `parametrize` mark: its items are known only to pytest."""
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    return any(isinstance(d.func if isinstance(d, ast.Call) else d, ast.Attribute)
               and (d.func if isinstance(d, ast.Call) else d).attr == "parametrize"  # type: ignore[union-attr]
               for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
               for d in n.decorator_list)


def is_module(path: Path) -> bool:
    """A test module (top-level `test_*` functions, no `--list`): pytest runs it; anything else is a script."""
    return not answers_list(path) and bool(test_functions(path))


def pytest_files(root: Path, test: Path) -> list[Path]:
    """What pytest reads besides the module: each folder's `conftest.py` and `__init__.py` from the module's
    folder up to `root`, the root's pytest config file, and the test_cases.json beside the module (the `case`
    fixture's) (docs/realops.md §4)."""
    root, folder = root.resolve(), test.resolve().parent
    if not folder.is_relative_to(root):
        return []
    found = [f / name for f in [folder, *folder.parents] if f.is_relative_to(root)
             for name in ("conftest.py", "__init__.py") if (f / name).is_file()]
    found += [folder / CASE_FILE] if (folder / CASE_FILE).is_file() else []
    for name, section in PYTEST_CONFIGS.items():
        path = root / name
        try:
            if path.is_file() and section in path.read_text(encoding="utf-8", errors="replace"):
                found.append(path)
                break
        except OSError:
            continue
    return found


def cases_of(events: list[dict[str, Any]], functions: list[str], asked: list[str],
             marks: dict[str, str]) -> list[TestFunction | SkippedFunction]:
    """A module's cases from its collection job's `pytest_items` event: each item, a skipped one reported
    without a job. When collection failed, each `test_*` function is a case, and its job shows why.
    `asked` (`--case`) names items or functions; an item asked for runs even when marked skip."""
    event = next((e for e in events if e.get("event") == "pytest_items"), None)
    listed = event.get("items") if event else None
    if not isinstance(listed, list):
        listed = [{"id": f, "skip": marks.get(f)} for f in functions]
    items = [(str(i.get("id")), i.get("skip")) for i in listed if isinstance(i, dict) and i.get("id")]
    covered = {i.split("[", 1)[0] for i, _ in items}
    left_out = (event or {}).get("left_out") or LEFT_OUT  # a module pytest skipped whole says why
    items += [(f, left_out) for f in functions if f not in covered]  # said, never dropped silently
    if asked:
        chosen = [TestFunction(i) for i, _ in items if i in asked or i.split("[", 1)[0] in asked]
        return chosen or [TestFunction(a) for a in asked]
    return [SkippedFunction(i, str(skip)) if skip is not None else TestFunction(i) for i, skip in items]
