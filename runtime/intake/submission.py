"""Turn a path (folder, .zip, .tar.gz or .py) into a validated submission."""
from __future__ import annotations

import ast
import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from runtime.intake import discover, imports, kernelbench, python_ast, testmodule
from runtime.intake.archive import is_archive, unpack
from runtime.intake.cases import CaseFile, load_case_file
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
    sys_path: list[str] = field(default_factory=list)  # folders (relative) the job puts on sys.path first
    task: str | None = None  # a KernelBench task file (relative): golden is its Model (runtime/intake/kernelbench.py)

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
        top = _single_top_dir(unpacked)
        if kernelbench.is_operator_dir(top):
            return load_task(top)
        if not (top / CASE_FILE).is_file():  # a bundle packed from a checkout (runtime.intake.discover.pack)
            return _single_operator(top)
        return _load_package(top, fallback_name=_archive_stem(path))
    if path.is_file() and path.suffix == ".py":
        return load_script(path)
    if kernelbench.is_operator_dir(path) and not (path / CASE_FILE).is_file():
        return load_task(path)
    if path.is_dir() and not (path / CASE_FILE).is_file():
        return _single_operator(path)
    if path.is_dir():
        return _load_package(path, fallback_name=path.resolve().name)
    raise SubmissionError(f"{path}: expected an operator package (folder, .zip, .tar.gz) or a .py script")


def load_task(op_dir: Path, task: Path | None = None) -> Submission:
    """A KernelBench task and the operator dir written for it (docs/kernelbench.md §1)."""
    op = kernelbench.load(op_dir, task)
    file, function = op.impl
    return Submission(kind="package", name=op.name, root=op.root, sha256=_digest(op.root, op.files), files=op.files,
                      case_file=CaseFile(op_name=op.name, cases=op.cases), impl=Entry(file, function),
                      golden=Entry(op.task, "Model"), sys_path=op.sys_path, task=op.task)


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


def load_script(path: Path, root: Path | None = None, files: list[str] | None = None) -> Submission:
    """A script alone, or with what it imports from its checkout when it walks up to `src/` (docs/realops.md §3)."""
    path = path.resolve()
    root = root or imports.tree_root(path)
    if root is None:
        root, files = path.parent, script_dir_files(path)
    elif files is None:
        files = script_files(root, path)
    return Submission(
        kind="script",
        name=path.stem,
        root=root,
        sha256=_digest(root, files),
        files=files,
        script=path.relative_to(root).as_posix(),
    )


def _single_operator(folder: Path) -> Submission:
    """A folder without test_cases.json at its top: a checkout (or a bundle of one) holding one operator."""
    named = from_entry_file(folder)
    if named is not None:
        return named
    found = discover.discover(folder)
    runnable = [op for op in found if op.route != "none"]
    if len(runnable) == 1:
        return load_operator(folder, runnable[0])
    if not found:
        hint = "; a KernelBench operator needs its task: --task TASK.py" if kernelbench.impl_ops(folder) else ""
        raise SubmissionError(f"{folder.name}: missing {CASE_FILE} (an operator package needs it), and no operator "
                              f"found under it (docs/realops.md §5){hint}")
    if not runnable:
        raise SubmissionError(f"{folder.name}: no runnable operator: {found[0].name}: {found[0].problem}")
    raise SubmissionError(f"{folder.name}: a checkout with {len(runnable)} operators "
                          f"({', '.join(op.name for op in runnable)}); choose with --op NAME, or --list them")


def package_submission(root: Path, folder: str, files: list[str], impl: str, golden: str,
                       sys_path: list[str]) -> Submission:
    """A gym test folder (test_cases.json, golden) driving the wrapper of a kernel elsewhere in the checkout."""
    case_file = load_case_file(root / folder / CASE_FILE, default_name=Path(folder).name)
    return _package(root, files, case_file, [impl], [golden], sys_path)


def script_dir_files(script: Path) -> list[str]:
    """A script outside any checkout: it and the modules and packages beside it that it imports, transitively.

    Python puts a script's own folder first on sys.path, so `import x_impl` and `from utils.fmt import f`
    resolve there in a plain run; they travel with the script (relative to its folder, docs/realops.md §3).
    """
    here = script.parent
    files = imports.closure(here, [script, *_pytest_reads(here, script)], [here])
    if len(files) > MAX_FILES:
        raise SubmissionError(f"{script.name}: imports too many files from {here} ({len(files)} > {MAX_FILES})")
    return files or [script.name]


def _pytest_reads(root: Path, script: Path) -> list[Path]:
    """A test module's conftest files and pytest config (docs/realops.md §4); nothing for a script."""
    return testmodule.pytest_files(root, script) if testmodule.is_module(script) else []


def script_files(root: Path, script: Path) -> list[str]:
    """The script, the files beside it (goldens, test_cases.json) and what they import from the checkout."""
    here = script.parent
    beside = [p for p in sorted(here.iterdir()) if p.is_file() and not p.is_symlink() and p.suffix != ".pyc"
              and not p.name.startswith(".")]
    files = imports.closure(root, [script, *beside, *_pytest_reads(root, script)], imports.import_roots(root, [here]))
    if len(files) > MAX_FILES:
        raise SubmissionError(f"{script.name}: needs too many files from {root} ({len(files)} > {MAX_FILES})")
    return files


def _load_package(root: Path, fallback_name: str) -> Submission:
    root = root.resolve()
    if not (root / CASE_FILE).is_file():
        raise SubmissionError(f"{root.name}: missing {CASE_FILE} (an operator package needs it)")
    files = _list_files(root)
    case_file = load_case_file(root / CASE_FILE, default_name=fallback_name)
    return _package(root, files, case_file, files, files)


def _package(root: Path, files: list[str], case_file: CaseFile, impl_files: list[str], golden_files: list[str],
             sys_path: list[str] | None = None) -> Submission:
    """A package submission: its wrapper and golden found among the given files (or named in test_cases.json)."""
    name = case_file.op_name
    return Submission(
        kind="package",
        name=name,
        root=root,
        sha256=_digest(root, files),
        files=files,
        case_file=case_file,
        impl=_resolve_entry(root, impl_files, case_file.impl, "_impl.py", f"{name}_wrapper", "_wrapper"),
        golden=_resolve_entry(root, golden_files, case_file.golden, "_golden.py", f"{name}_golden", "_golden"),
        sys_path=sys_path or [],
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
    callers = jit_callers(root / rel) if func_suffix == "_wrapper" else []
    if len(callers) == 1:  # the wrapper may be named anything: the function that calls the jit kernel
        return Entry(rel, callers[0])
    if callers:
        raise SubmissionError(f"{rel}: several functions call a jit kernel ({', '.join(callers)}); name the wrapper "
                              f"in {CASE_FILE} as \"impl\": \"{rel}:function\"")
    raise SubmissionError(f"{rel}: missing function '{wanted}' (or a function calling a jit kernel)")


def jit_callers(path: Path) -> list[str]:
    """Top-level functions that call a `@...jit`-decorated function of the same file (docs/realops.md §7)."""
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return []
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    kernels = {f.name for f in functions if any("jit" in ast.unparse(d) for d in f.decorator_list)}
    return [f.name for f in functions if f.name not in kernels and any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in kernels for c in ast.walk(f))]


def _top_level_functions(path: Path) -> set[str] | None:
    """Names bound at module level (defs, assignments, imports), read without importing."""
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
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


def from_entry_file(root: Path) -> Submission | None:
    """A bundle packed from a test file names it in discover.ENTRY_FILE; None when there is none."""
    try:
        raw = json.loads((root / discover.ENTRY_FILE).read_text(encoding="utf-8"))
        entry, name = str(raw["entry"]), str(raw.get("operator") or "")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = (root / entry).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        raise SubmissionError(f"{discover.ENTRY_FILE}: {entry!r} is not a file of the bundle")
    sub = load_script(path, root.resolve())
    sub.name = name or sub.name
    return sub


def load_operator(checkout: Path, operator: discover.FoundOperator) -> Submission:
    """The submission for one discovered operator. Raises SubmissionError."""
    root = Path(checkout).resolve()
    if operator.route == "none":
        raise SubmissionError(f"{operator.name}: cannot run: {operator.problem}")
    if operator.task:  # a benchmark run's operator and its KernelBench task
        sub = load_task(root / operator.folder, root / operator.task)
        sub.name = operator.name
        return sub
    if operator.entry:
        sub = load_script(root / operator.entry, root, operator.files)
        sub.name = operator.name
        return sub
    if operator.impl and operator.golden:
        return package_submission(root, operator.folder, operator.files, operator.impl, operator.golden,
                                  operator.sys_path)
    return load(root / operator.folder, root)
