"""Turn a path (folder, .zip, .tar.gz or .py) into a validated submission."""
from __future__ import annotations

import ast
import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from runtime import imports
from runtime.archive import is_archive, unpack
from runtime.cases import CaseFile, load_case_file
from runtime.errors import SubmissionError

CASE_FILE = "test_cases.json"
MAX_FILES = 500
SKIP_DIRS = {"__pycache__", ".git", "output", ".pytest_cache"}


@dataclass
class Entry:
    """A function named by file (relative to the submission root) and name."""
    file: str
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.function}"


@dataclass
class Submission:
    kind: str  # "package" | "script"
    name: str
    root: Path
    sha256: str
    files: list[str] = field(default_factory=list)  # relative paths, sorted
    case_file: CaseFile | None = None
    impl: Entry | None = None
    golden: Entry | None = None
    script: str | None = None  # relative path of the script

    @property
    def python_files(self) -> list[str]:
        return [f for f in self.files if f.endswith(".py")]


def load(path: Path, workdir: Path) -> Submission:
    """Validate `path`; archives are unpacked under `workdir`. Raises SubmissionError."""
    path = Path(path)
    if not path.exists():
        raise SubmissionError(f"{path}: no such file or folder")
    if path.is_file() and is_archive(path):
        unpacked = unpack(path, workdir / "unpacked")
        return _load_package(_single_top_dir(unpacked), fallback_name=_archive_stem(path))
    if path.is_file() and path.suffix == ".py":
        return _load_script(path)
    if path.is_dir():
        return _load_package(path, fallback_name=path.resolve().name)
    raise SubmissionError(f"{path}: expected an operator package (folder, .zip, .tar.gz) or a .py script")


def copy_into(sub: Submission, dest: Path) -> Path:
    """Copy the submission's files into `dest` (the job's private source dir)."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel in sub.files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sub.root / rel, target)
    return dest


def _archive_stem(path: Path) -> str:
    name = path.name
    for suffix in (".tar.gz", ".tgz", ".zip"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _single_top_dir(root: Path) -> Path:
    if (root / CASE_FILE).exists():
        return root
    children = [c for c in root.iterdir() if c.name not in SKIP_DIRS and not c.name.startswith(".")]
    if len(children) == 1 and children[0].is_dir():
        return children[0]
    return root


def _list_files(root: Path) -> list[str]:
    files = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in SKIP_DIRS or part.startswith(".") for part in rel.parts):
            continue
        if p.is_symlink():
            raise SubmissionError(f"{rel}: links are not allowed in a submission")
        if p.is_file():
            files.append(rel.as_posix())
    if len(files) > MAX_FILES:
        raise SubmissionError(f"{root.name}: too many files ({len(files)} > {MAX_FILES})")
    return files


def _digest(root: Path, files: list[str]) -> str:
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return h.hexdigest()


def _load_script(path: Path) -> Submission:
    """A script alone, or with what it imports from its checkout when it walks up to `src/` (docs/realops.md §3)."""
    path = path.resolve()
    root = imports.tree_root(path)
    if root is None:
        root, files = path.parent, [path.name]
    else:
        files = script_files(root, path)
    return Submission(
        kind="script",
        name=path.stem,
        root=root,
        sha256=_digest(root, files),
        files=files,
        script=path.relative_to(root).as_posix(),
    )


def script_files(root: Path, script: Path) -> list[str]:
    """The script, the files beside it (goldens, test_cases.json) and what they import from the checkout."""
    here = script.parent
    beside = [p for p in sorted(here.iterdir()) if p.is_file() and not p.is_symlink() and p.suffix != ".pyc"
              and not p.name.startswith(".")]
    files = imports.closure(root, [script, *beside], imports.import_roots(root, [here]))
    if len(files) > MAX_FILES:
        raise SubmissionError(f"{script.name}: needs too many files from {root} ({len(files)} > {MAX_FILES})")
    return files


def _load_package(root: Path, fallback_name: str) -> Submission:
    root = root.resolve()
    if not (root / CASE_FILE).is_file():
        raise SubmissionError(f"{root.name}: missing {CASE_FILE} (an operator package needs it)")
    files = _list_files(root)
    case_file = load_case_file(root / CASE_FILE, default_name=fallback_name)
    impl = _resolve_entry(root, files, case_file.impl, "_impl.py", f"{case_file.op_name}_wrapper", "_wrapper")
    golden = _resolve_entry(root, files, case_file.golden, "_golden.py", f"{case_file.op_name}_golden", "_golden")
    return Submission(
        kind="package",
        name=case_file.op_name,
        root=root,
        sha256=_digest(root, files),
        files=files,
        case_file=case_file,
        impl=impl,
        golden=golden,
    )


def _resolve_entry(root: Path, files: list[str], explicit: str | None, file_suffix: str,
                   wanted: str, func_suffix: str) -> Entry:
    """Find the impl/golden function: explicit "file.py:function", else the gym convention."""
    if explicit:
        rel, func = explicit.split(":")
        if rel not in files:
            raise SubmissionError(f"{CASE_FILE}: '{explicit}': missing file {rel}")
        names = _top_level_functions(root / rel)
        if names is not None and func not in names:
            raise SubmissionError(f"{rel}: missing function '{func}' (named in {CASE_FILE})")
        return Entry(rel, func)
    candidates = [f for f in files if f.endswith(file_suffix)]
    preferred = [f for f in candidates if Path(f).name.lower() == wanted.replace(func_suffix, file_suffix).lower()]
    chosen = preferred or candidates
    if not chosen:
        raise SubmissionError(f"missing *{file_suffix} file (expected one exporting {wanted})")
    if len(chosen) > 1:
        raise SubmissionError(
            f"several *{file_suffix} files ({', '.join(chosen)}); name one in {CASE_FILE} as \"file.py:function\""
        )
    rel = chosen[0]
    names = _top_level_functions(root / rel)
    if names is None:
        return Entry(rel, wanted)  # a syntax error: the syntax stage reports it
    exact = [n for n in names if n.lower() == wanted.lower()]
    suffixed = [n for n in names if n.endswith(func_suffix)]
    if exact:
        return Entry(rel, exact[0])
    if len(suffixed) == 1:
        return Entry(rel, suffixed[0])
    raise SubmissionError(f"{rel}: missing function '{wanted}'")


def _top_level_functions(path: Path) -> set[str] | None:
    """Names bound at module level (defs, assignments, imports), read without importing."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names

