"""Find the operators of a checkout (minimal: operator packages, i.e. folders holding test_cases.json).

Public API, shared by `crosscheck ci run` (and meant for `crosscheck run CHECKOUT --list`):

    discover(checkout, ops=None) -> list[FoundOperator]
    pack(checkout, operator) -> bytes     one operator's files as a deterministic zip

An operator that cannot run keeps its place with route "none" and a `problem`, so callers report
it instead of skipping it silently.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from runtime import archive
from runtime.cases import load_case_file
from runtime.errors import SubmissionError

CASE_FILE = "test_cases.json"
SKIP_DIRS = {"__pycache__", ".git", "output", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"}
MAX_BUNDLE_BYTES = 5 * 1024 * 1024


@dataclass
class FoundOperator:
    name: str
    route: str  # package | none (cannot run: see `problem`)
    folder: str  # relative to the checkout
    files: list[str] = field(default_factory=list)  # relative to the checkout
    cases: list[str] = field(default_factory=list)
    problem: str = ""


def key(name: str) -> str:
    """Names match ignoring case and `_` (InplaceAddRmsNorm ~ inplace_add_rms_norm)."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def discover(checkout: Path, ops: list[str] | None = None) -> list[FoundOperator]:
    """Every operator package under `checkout`, by name; `ops` keeps only those (all must exist)."""
    root = Path(checkout)
    if not root.is_dir():
        raise SubmissionError(f"{checkout}: not a folder (give the checkout's root)")
    root = root.resolve()
    found = [_operator(root, Path(d)) for d in _package_dirs(root)]
    seen: dict[str, FoundOperator] = {}
    for op in found:
        if op.route != "none" and key(op.name) in seen:
            op.route, op.problem = "none", f"op_name {op.name!r} is also used by {seen[key(op.name)].folder}"
        seen.setdefault(key(op.name), op)
    if ops:
        wanted = {key(o): o for o in ops}
        missing = [o for k, o in wanted.items() if not any(key(f.name) == k for f in found)]
        if missing:
            known = ", ".join(sorted(f.name for f in found)) or "none"
            raise SubmissionError(f"no operator named {', '.join(missing)} under {checkout} (found: {known})")
        found = [f for f in found if key(f.name) in wanted]
    return sorted(found, key=lambda f: (f.name, f.folder))


def _package_dirs(root: Path) -> list[str]:
    out = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if CASE_FILE in files:
            out.append(here)
            dirs[:] = []  # a package's subfolders belong to it
    return out


def _operator(root: Path, folder: Path) -> FoundOperator:
    rel = folder.relative_to(root).as_posix() or "."
    files = sorted(p.relative_to(root).as_posix() for p in folder.rglob("*")
                    if p.is_file() and not p.is_symlink() and not (set(p.relative_to(folder).parts[:-1]) & SKIP_DIRS)
                    and p.suffix != ".pyc" and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    try:
        case_file = load_case_file(folder / CASE_FILE, default_name=folder.name)
    except SubmissionError as exc:
        return FoundOperator(folder.name, "none", rel, files, [], str(exc))
    if not any(f.endswith("_impl.py") for f in files):
        return FoundOperator(case_file.op_name, "none", rel, files, [c.id for c in case_file.cases],
                             f"{rel}: no *_impl.py next to {CASE_FILE}")
    return FoundOperator(case_file.op_name, "package", rel, files, [c.id for c in case_file.cases])


def pack(checkout: Path, operator: FoundOperator) -> bytes:
    """The operator's folder as a deterministic zip (paths relative to the folder): the same files
    always give the same bytes."""
    root = Path(checkout).resolve()
    prefix = "" if operator.folder == "." else operator.folder + "/"
    data = archive.write_zip((rel.removeprefix(prefix), (root / rel).read_bytes()) for rel in operator.files)
    if len(data) > MAX_BUNDLE_BYTES:
        raise SubmissionError(f"{operator.folder}: the bundle is {len(data)} bytes, over {MAX_BUNDLE_BYTES >> 20} MiB")
    return data
