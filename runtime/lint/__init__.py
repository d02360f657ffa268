"""Static checks of a PyPTO submission's source, with the stdlib `ast` only: nothing of it is imported or run.
The version-skew rules also read the installed pypto's API, introspected apart (runtime.devices.pypto_api).

`lint_source` checks one file. `lint_files` checks a submission's files and lets each module know which
names its siblings export as kernel launches (see `runtime.lint.module` for that heuristic). Rule ids
are stable: the dashboard and the verdict logic key on them.
"""
from __future__ import annotations

import ast
import pathlib
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runtime.intake import python_ast
from runtime.lint.api import check_api
from runtime.lint.host import check_host
from runtime.lint.kernel import check_kernels
from runtime.lint.module import Module
from runtime.lint.rules import GOLDEN_FALLBACK, RULES, SEVERITY, VERSION_SKEW_RULES, Findings
from runtime.lint.tiles import TilePlan, constant_tiles
from runtime.report import LintFinding

if TYPE_CHECKING:  # the lint imports no other runtime module (tests/runtime/test_lint.py)
    from runtime.devices.pypto_api import PyptoApi

__all__ = ["GOLDEN_FALLBACK", "RULES", "SEVERITY", "VERSION_SKEW_RULES", "TilePlan", "lint_files", "lint_source",
           "vec_tile_plans"]


def lint_source(text: str, file: str, api: PyptoApi | None = None) -> list[LintFinding]:
    """Findings for one file's source, sorted by line; a file that does not parse yields none.

    With `api` (the installed pypto's, runtime.devices.pypto_api), pypto names and calls are checked against it.
    """
    tree = _parse(text)
    return [] if tree is None else _lint(tree, text, file, siblings={}, api=api)


def lint_files(paths: list[pathlib.Path], root: pathlib.Path, api: PyptoApi | None = None) -> list[LintFinding]:
    """Findings for a submission's Python files, sorted by file then line (paths relative to `root`)."""
    sources: dict[str, tuple[str, ast.Module]] = {}
    for path in paths:
        try:
            text = pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:  # unreadable files are the syntax stage's to report
            continue
        tree = _parse(text)
        if tree is not None:
            sources[_relative(path, root)] = (text, tree)
    siblings: dict[str, frozenset[str]] = {}
    for file, (_, tree) in sources.items():
        stem = pathlib.PurePosixPath(file).stem
        siblings[stem] = siblings.get(stem, frozenset()) | Module(tree, {}).exported_launches()
    findings = [finding for file, (text, tree) in sources.items()
                for finding in _lint(tree, text, file, siblings, api)]
    return sorted(findings, key=lambda f: (f.file, f.line, f.rule))


def vec_tile_plans(paths: list[pathlib.Path], root: pathlib.Path) -> dict[str, list[TilePlan]]:
    """Each jit kernel's constant vec tiles, by kernel name, for comparing with the shapes its launches get."""
    plans: dict[str, list[TilePlan]] = {}
    for path in paths:
        try:
            tree = _parse(pathlib.Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if tree is None:
            continue
        module, file = Module(tree, {}), _relative(path, root)
        for name, kernel in module.kernels.items():
            found = constant_tiles(module, kernel)
            plans.setdefault(name, []).extend(TilePlan(file, line, tiles) for line, tiles in found)
    return plans


def _lint(tree: ast.Module, text: str, file: str, siblings: Mapping[str, frozenset[str]],
          api: PyptoApi | None = None) -> list[LintFinding]:
    findings = Findings(file, text)
    try:
        module = Module(tree, siblings)
        check_kernels(module, findings)
        check_host(module, findings)
        if api is not None:
            check_api(module, findings, api)
    except RecursionError:  # absurdly deep expressions: give up on this file rather than on the run
        return []
    return findings.sorted()


def _parse(text: str) -> ast.Module | None:
    """The module's AST, or None when it does not parse (syntax is reported by its own stage)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SyntaxWarning for "\d" in the user's strings
        try:
            return python_ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _relative(path: pathlib.Path, root: pathlib.Path) -> str:
    try:
        return pathlib.Path(path).resolve().relative_to(pathlib.Path(root).resolve()).as_posix()
    except ValueError:
        return pathlib.Path(path).name
