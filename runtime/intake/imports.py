"""What a test file needs from its checkout: the static import closure (docs/realops.md §3).

Real test files find their kernels by walking up to the checkout's `src/` and putting folders
under it on sys.path. We cannot run that code to learn the path, so every folder under `src/`
is a candidate import root, after the file's own folder. A dotted name resolves under the first
root holding it, with the `__init__.py` of each package on the way (they run at import, so their
own imports are followed too). Names that resolve nowhere (torch, pypto, numpy) are the host's.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

from runtime.intake import python_ast

SKIP_DIRS = {"__pycache__", ".git", "output", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"}
MAX_ROOT_DEPTH = 8
MAX_FILES = 500


def tree_root(script: Path) -> Path | None:
    """The checkout a test file walks up into: the nearest ancestor holding `src/`, when the file names 'src'
    (or a path in it) or imports a top-level package that ancestor's `src/` holds (a src layout installed with `pip install -e .`)."""
    script = script.resolve()
    try:
        tree = python_ast.parse(script.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return None
    # 'src' alone (the walk-up idiom) or a path into it: `parents[3] / "src/pypto_gym/ops/…"` (docs/realops.md §10)
    names_src = any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and (n.value == "src" or n.value.startswith("src/")) for n in ast.walk(tree))
    tops = {name.split(".")[0] for node in ast.walk(tree) for name in _absolute_imports(node)}
    for parent in script.parents:
        src = parent / "src"
        if src.is_dir() and (names_src or any((src / t).is_dir() or (src / f"{t}.py").is_file() for t in tops)):
            return parent
    return None


def _absolute_imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def import_roots(root: Path, first: list[Path]) -> list[Path]:
    """Folders an import may resolve under: `first`, then `src/` and every folder below it, then root."""
    return SrcIndex(root).roots(first).all


def walk(top: Path) -> list[tuple[str, list[str], list[str]]]:
    """os.walk of `top`, sorted, not into SKIP_DIRS or dot-folders: (folder, its sub-folders, its other entries).

    The sub-folders are all of them, before pruning (an import may still name one)."""
    out = []
    for here, dirs, files in os.walk(top):
        out.append((here, list(dirs), files))
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
    return out


class SrcIndex:
    """`src/` and every folder below it (MAX_ROOT_DEPTH deep), walked once per checkout, with the names each folder
    holds (a sub-folder `x/` or a module `x.py`, by first part and ignoring case): a name is then only probed
    under the folders that hold it, and an import of torch or json costs nothing however big `src/` is."""

    def __init__(self, root: Path, walked: list[tuple[str, list[str], list[str]]] | None = None):
        """`walked`: walk(root / "src") when the caller has it already (discover walks `src/` once for both)."""
        self.root = root
        self.folders: list[Path] = []
        self.holders: dict[str, list[Path]] = {}
        src = root / "src"
        if not src.is_dir():
            return
        for here, dirs, files in walk(src) if walked is None else walked:
            folder = Path(here)
            if len(folder.relative_to(src).parts) > MAX_ROOT_DEPTH:
                continue
            self.folders.append(folder)
            for name in {*dirs, *(f[:-3] for f in files if f.endswith(".py"))}:
                self.holders.setdefault(name.casefold(), []).append(folder)

    def roots(self, first: list[Path]) -> Roots:
        return Roots(first, self)


class Roots:
    """The import roots of one test file or kernel: `first`, then the shared `src/` folders, then the root.

    A plain list of folders (`Roots(folders)`) is probed folder by folder, as given."""

    def __init__(self, first: list[Path], index: SrcIndex | None = None):
        self.first = list(first)
        self.index = index
        self.all = list(dict.fromkeys([*first, *index.folders, index.root] if index else first))

    def with_first(self, folders: list[Path]) -> "Roots":
        """The same roots with `folders` probed first (a file's own sys.path entries)."""
        return Roots([*folders, *self.first], self.index) if folders else self

    def candidates(self, module: str) -> list[Path]:
        """The roots, in order, that may hold `module`: those without its first part cannot resolve it."""
        if self.index is None:
            return self.all
        top = next((p for p in module.split(".") if p), "").casefold()
        return list(dict.fromkeys([*self.first, *self.index.holders.get(top, ()), self.index.root]))


def closure(root: Path, entries: list[Path], roots: list[Path] | Roots, used: set[Path] | None = None) -> list[str]:
    """Files (relative to root, sorted) that `entries` import, transitively, inside root.

    `used`, when given, receives the roots that resolved an absolute import (the job's sys.path).
    """
    root = root.resolve()
    roots = roots if isinstance(roots, Roots) else Roots(roots)
    seen: set[Path] = set()
    todo = [p.resolve() for p in entries]
    while todo and len(seen) < MAX_FILES:
        path = todo.pop()
        if path in seen or not path.is_relative_to(root) or not path.is_file():
            continue
        seen.add(path)
        if path.suffix == ".py":
            todo += _imported_files(path, roots, used if used is not None else set(), root)
    return sorted(p.relative_to(root).as_posix() for p in seen)


def _imported_files(path: Path, roots: Roots, used: set[Path], root: Path | None = None) -> list[Path]:
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return []
    roots = roots.with_first(_named_src_folders(tree, root)) if root is not None else roots
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _resolve(alias.name, roots, used)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                found += _resolve_under(base, node.module or "", [a.name for a in node.names])
            else:
                found += _resolve(node.module or "", roots, used, [a.name for a in node.names])
        elif (name := _literal_import(node)) is not None:
            found += _resolve(name, roots, used)
    return found


def _named_src_folders(tree: ast.AST, root: Path) -> list[Path]:
    """Folders a file names by a path into src/ (`parents[3] / "src/pypto_gym/ops/…/mla_prolog"`): it puts them on
    sys.path before importing from them, so its imports resolve there first (docs/realops.md §10)."""
    named = (n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.startswith("src/") and ".." not in n.value)
    return list(dict.fromkeys(root / v.rstrip("/") for v in named if (root / v).is_dir()))


def _literal_import(node: ast.AST) -> str | None:
    """The module of `importlib.import_module("a.b")` / `__import__("a.b")` with a literal name, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = node.args[0]
    if called not in ("import_module", "__import__") or not isinstance(first, ast.Constant):
        return None
    return first.value if isinstance(first.value, str) and not first.value.startswith(".") else None


def _resolve(module: str, roots: Roots, used: set[Path], members: list[str] | None = None) -> list[Path]:
    for root in roots.candidates(module):
        hit = _resolve_under(root, module, members or [])
        if hit:
            used.add(root)
            return hit
    return []


def _resolve_under(base: Path, module: str, members: list[str]) -> list[Path]:
    """Files for `module` (and its `members` that are submodules) under one folder; [] when absent."""
    parts = [p for p in module.split(".") if p]
    files: list[Path] = []
    here = base
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if last and (here / f"{part}.py").is_file():
            return [*files, here / f"{part}.py"]
        here = here / part
        if not here.is_dir():
            return []
        if (here / "__init__.py").is_file():
            files.append(here / "__init__.py")
    for member in members:
        if (here / f"{member}.py").is_file():
            files.append(here / f"{member}.py")
        elif (here / member / "__init__.py").is_file():
            files.append(here / member / "__init__.py")
    return files if (files or parts) else []
