"""Static checks of a PyPTO submission's source, with the stdlib `ast` only: nothing is imported or run.

`lint_source` checks one file. `lint_files` checks a submission's files and lets each module know which
names its siblings export as kernel launches (see `runtime.lint.module` for that heuristic). Rule ids
are stable: the dashboard and the verdict logic key on them.
"""
from __future__ import annotations

import ast
import pathlib
import warnings
from collections.abc import Mapping

from runtime.lint.host import check_host
from runtime.lint.kernel import check_kernels
from runtime.lint.module import Module
from runtime.lint.rules import GOLDEN_FALLBACK, RULES, SEVERITY, Findings
from runtime.report import LintFinding

__all__ = ["GOLDEN_FALLBACK", "RULES", "SEVERITY", "lint_files", "lint_source"]


def lint_source(text: str, file: str) -> list[LintFinding]:
    """Findings for one file's source, sorted by line; a file that does not parse yields none."""
    tree = _parse(text)
    return [] if tree is None else _lint(tree, text, file, siblings={})


def lint_files(paths: list[pathlib.Path], root: pathlib.Path) -> list[LintFinding]:
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
    findings = [finding for file, (text, tree) in sources.items() for finding in _lint(tree, text, file, siblings)]
    return sorted(findings, key=lambda f: (f.file, f.line, f.rule))


def _lint(tree: ast.Module, text: str, file: str, siblings: Mapping[str, frozenset[str]]) -> list[LintFinding]:
    findings = Findings(file, text)
    try:
        module = Module(tree, siblings)
        check_kernels(module, findings)
        check_host(module, findings)
    except RecursionError:  # absurdly deep expressions: give up on this file rather than on the run
        return []
    return findings.sorted()


def _parse(text: str) -> ast.Module | None:
    """The module's AST, or None when it does not parse (syntax is reported by its own stage)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SyntaxWarning for "\d" in the user's strings
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _relative(path: pathlib.Path, root: pathlib.Path) -> str:
    try:
        return pathlib.Path(path).resolve().relative_to(pathlib.Path(root).resolve()).as_posix()
    except ValueError:
        return pathlib.Path(path).name
