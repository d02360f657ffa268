"""Find the operators of a checkout and what each one's job needs (docs/realops.md §5).

Public API (runtime.intake.submission.load_operator turns an operator into a submission), shared by `crosscheck run CHECKOUT --list/--op` and `crosscheck ci run`:

    discover(checkout, ops=None) -> list[FoundOperator]
    pack(checkout, operator) -> bytes     the files the operator's job needs, as a deterministic zip

Two layouts: a plain package (a folder with test_cases.json beside an *_impl.py), and the gym's pair
of a test folder `tests/ops/**/<Op>/` and a kernel folder `src/**/<op>/` holding *_impl.py, matched by
name ignoring case and `_`. Every test file under `tests/ops/` is an operator of its own, a model folder's
named after what it tests. An operator that cannot run keeps its place with route "none" and a
`problem`, so callers report it instead of skipping it silently.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from runtime.intake import archive, imports, testmodule
from runtime.intake.cases import load_case_file
from runtime.errors import SubmissionError

CASE_FILE = "test_cases.json"
TESTS_OPS = "tests/ops"  # every test file under it is an operator (docs/realops.md §5)
SKIP_DIRS = imports.SKIP_DIRS  # the one walk of src/ serves both, so they skip the same folders
MAX_BUNDLE_BYTES = 5 * 1024 * 1024
MAX_BUNDLE_FILES = 500
# In a bundle of a test file: which file to run (its folder need not match any kernel's name).
ENTRY_FILE = "crosscheck_entry.json"


@dataclass
class FoundOperator:
    name: str
    route: str  # package | script | module | none (cannot run: see `problem`)
    folder: str  # the test folder (or the package), relative to the checkout
    files: list[str] = field(default_factory=list)  # what the job needs, relative to the checkout
    cases: list[str] = field(default_factory=list)
    problem: str = ""
    entry: str | None = None  # script/module: the test file
    impl: str | None = None  # gym package: the *_impl.py
    golden: str | None = None  # gym package: the *_golden.py
    sys_path: list[str] = field(default_factory=list)  # gym package: folders its imports resolve under
    task: str | None = None  # route "task": the KernelBench task file (runtime/intake/benchmark_run.py)


def key(name: str) -> str:
    """Names match ignoring case and `_` (InplaceAddRmsNorm ~ inplace_add_rms_norm)."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def discover(checkout: Path, ops: list[str] | None = None) -> list[FoundOperator]:
    """Every operator under `checkout`, by name; `ops` keeps only those (all must exist)."""
    root = Path(checkout)
    if not root.is_dir():
        raise SubmissionError(f"{checkout}: not a folder (give the checkout's root)")
    root = root.resolve()
    src = imports.walk(root / "src") if (root / "src").is_dir() else []  # once: kernels and every import's roots
    kernels = _kernel_dirs(src)
    index = imports.SrcIndex(root, src)
    found = [op for d in _test_dirs(root, kernels) for op in _operators(root, Path(d), kernels, index)]
    _qualify(found)
    seen: dict[str, FoundOperator] = {}
    for op in found:
        if op.route != "none" and key(op.name) in seen:
            op.route, op.problem = "none", f"op_name {op.name!r} is also used by {seen[key(op.name)].folder}"
        seen.setdefault(key(op.name), op)
    if ops:
        wanted = {key(o): o for o in ops}
        missing = [o for k, o in wanted.items() if not any(k in _answers_to(f) for f in found)]
        if missing:
            known = ", ".join(sorted(f.name for f in found)) or "none"
            raise SubmissionError(f"no operator named {', '.join(missing)} under {checkout} (found: {known})")
        found = [f for f in found if _answers_to(f) & set(wanted)]
    return sorted(found, key=lambda f: (f.name, f.folder))


def _answers_to(op: FoundOperator) -> set[str]:
    """The keys `--op` finds it by: its name, its folder's (every test of a model folder), its test file's."""
    names = {key(op.name), key(Path(op.folder).name)}
    return names | {key(_tested(Path(op.entry)))} if op.entry else names


def _tested(test: Path) -> str:
    """What a test file tests, by its name: `test_attn_softmax.py` -> attn_softmax."""
    return test.stem.removeprefix("test_")


def _qualify(found: list[FoundOperator]) -> None:
    """A test named after what it tests may share that name with another operator (rms_norm in several model
    folders): then it is `<folder>.<name>` (docs/realops.md §5)."""
    counts: dict[str, int] = {}
    for op in found:
        counts[key(op.name)] = counts.get(key(op.name), 0) + 1
    for op in found:
        if op.entry and counts[key(op.name)] > 1 and op.name == _tested(Path(op.entry)):
            op.name = f"{Path(op.folder).name}.{op.name}"


def _kernel_dirs(src: list[tuple[str, list[str], list[str]]]) -> dict[str, Path]:
    """Kernel folders under src/ (its walk) by key: the folder's name and each *_impl.py's name without `_impl`."""
    found: dict[str, Path] = {}
    for here, _, files in src:
        for name in sorted(f for f in files if f.endswith("_impl.py")):
            found.setdefault(key(name[: -len("_impl.py")]), Path(here) / name)
            found.setdefault(key(Path(here).name), Path(here) / name)
    return found


def _test_dirs(root: Path, kernels: dict[str, Path]) -> list[str]:
    """Folders holding test_cases.json (a package's subfolders belong to it), gym test folders whose
    name matches a kernel and that hold a test file, and every folder under tests/ops/ holding a test file."""
    out = []
    ops = root / TESTS_OPS
    for here, dirs, files in os.walk(root):  # all but src/, walked already
        top = here == str(root)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and not (top and d == "src"))
        tests = (key(Path(here).name) in kernels or Path(here).is_relative_to(ops)) and _test_files(Path(here))
        if CASE_FILE in files or tests:
            out.append(here)
    packages = {Path(d) for d in out if any(f.endswith("_impl.py") for f in os.listdir(d))}
    return [d for d in out if not any(p in packages for p in Path(d).parents)]


def _test_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("test_*.py") if p.is_file())


def _operators(root: Path, folder: Path, kernels: dict[str, Path], index: imports.SrcIndex) -> list[FoundOperator]:
    """The folder's operators: each test file is one (its test imports its kernel, by a path of its own or the
    kernel folder the folder is named like: docs/realops.md §10); without one, the folder's package."""
    rel = folder.relative_to(root).as_posix() or "."
    if any(folder.glob("*_impl.py")):
        return [_plain_package(root, folder, rel)]
    name = _op_name(folder)
    tests = _test_files(folder)
    if len(tests) == 1 and (name != folder.name or key(folder.name) in kernels):
        return [_test_file_operator(root, folder, rel, name, tests[0], index)]  # its own name, as before
    if tests:  # a model folder's tests: each named after what it tests (docs/realops.md §5)
        own = next((t for t in tests if key(_tested(t)) in (key(folder.name), key(name))), None)
        return [_test_file_operator(root, folder, rel, name if t == own else _tested(t), t, index) for t in tests]
    impl = kernels.get(key(folder.name))
    if impl is None:
        return [FoundOperator(name, "none", rel, problem=f"{rel}: no *_impl.py beside {CASE_FILE}, and no kernel "
                              f"folder under src/ named like {folder.name!r} (names match ignoring case and '_')")]
    return [_gym_package(root, folder, rel, name, impl, index)]


def _op_name(folder: Path) -> str:
    try:
        raw = json.loads((folder / CASE_FILE).read_text(encoding="utf-8"))
        if isinstance(raw.get("op_name"), str) and raw["op_name"].strip():
            return str(raw["op_name"].strip())
    except (OSError, ValueError, AttributeError):
        pass
    return folder.name


def _package_files(folder: Path, root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in folder.rglob("*")
                  if p.is_file() and not p.is_symlink() and not (set(p.relative_to(folder).parts[:-1]) & SKIP_DIRS)
                  and p.suffix != ".pyc" and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def _plain_package(root: Path, folder: Path, rel: str) -> FoundOperator:
    files = _package_files(folder, root)
    try:
        case_file = load_case_file(folder / CASE_FILE, default_name=folder.name)
    except SubmissionError as exc:
        return FoundOperator(folder.name, "none", rel, files, [], str(exc))
    return FoundOperator(case_file.op_name, "package", rel, files, [c.id for c in case_file.cases])


def _test_file_operator(root: Path, folder: Path, rel: str, name: str, test: Path,
                        index: imports.SrcIndex) -> FoundOperator:
    entry = test.relative_to(root).as_posix()
    module = testmodule.is_module(test)
    pytest_reads = testmodule.pytest_files(root, test) if module else []  # conftests and config (§4)
    try:
        files = imports.closure(root, [test, *_beside(folder), *pytest_reads], index.roots([folder]))
    except OSError as exc:
        return FoundOperator(name, "none", rel, problem=f"{entry}: {exc}")
    if module:
        return FoundOperator(name, "module", rel, files, testmodule.test_functions(test), entry=entry)
    return FoundOperator(name, "script", rel, files, _listed_ids(folder, {name, _tested(test)}), entry=entry)


def _beside(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink() and p.suffix != ".pyc"
            and not p.name.startswith(".")]


def _listed_ids(folder: Path, names: set[str]) -> list[str]:
    """The ids a script will probably list: those of its test_cases.json (the run asks the script itself);
    when its cases name their operator (`"op_name"`, one file for a model folder's tests), those of `names`."""
    try:
        raw = json.loads((folder / CASE_FILE).read_text(encoding="utf-8"))
        cases = [c for c in raw["test_cases"] if isinstance(c, dict) and "id" in c]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    wanted = {key(n) for n in names}
    own = [c for c in cases if key(str(c.get("op_name", ""))) in wanted]
    return [str(c["id"]) for c in own or cases]


def _gym_package(root: Path, folder: Path, rel: str, name: str, impl: Path, index: imports.SrcIndex) -> FoundOperator:
    """A test folder without a test file: its test_cases.json and golden drive the kernel's wrapper."""
    goldens = sorted(folder.glob("*_golden.py"))
    if not (folder / CASE_FILE).is_file() or not goldens:
        return FoundOperator(name, "none", rel, problem=f"{rel}: needs a test file, or {CASE_FILE} and a *_golden.py")
    try:
        case_file = load_case_file(folder / CASE_FILE, default_name=folder.name)
    except SubmissionError as exc:
        return FoundOperator(name, "none", rel, problem=str(exc))
    used: set[Path] = set()
    roots = index.roots([folder, impl.parent])
    files = imports.closure(root, [*_beside(folder), impl], roots, used)
    sys_path = [p.relative_to(root).as_posix() for p in [folder, impl.parent, *sorted(used)]]
    return FoundOperator(case_file.op_name, "package", rel, files, [c.id for c in case_file.cases],
                         impl=impl.relative_to(root).as_posix(),
                         golden=goldens[0].relative_to(root).as_posix(), sys_path=list(dict.fromkeys(sys_path)))


def of_test_file(path: Path) -> FoundOperator | None:
    """A test file inside a checkout as an operator of its own (`crosscheck submit path/to/test_x.py`)."""
    path = path.resolve()
    root = imports.tree_root(path)
    if root is None:
        return None
    return _test_file_operator(root, path.parent, path.parent.relative_to(root).as_posix(), _op_name(path.parent), path,
                               imports.SrcIndex(root))


def pack(checkout: Path, operator: FoundOperator) -> bytes:
    """The operator's files as a deterministic zip: the same files always give the same bytes.

    A plain package is zipped relative to its folder; anything else keeps its paths in the checkout,
    so the job sees the tree the way the test expects it.
    """
    root = Path(checkout).resolve()
    prefix = "" if operator.folder == "." else operator.folder + "/"
    inside = all(rel.startswith(prefix) for rel in operator.files) and operator.route == "package" \
        and not operator.impl
    if len(operator.files) > MAX_BUNDLE_FILES:
        raise SubmissionError(f"{operator.folder}: the bundle has {len(operator.files)} files, over {MAX_BUNDLE_FILES}")
    members = [(rel.removeprefix(prefix) if inside else rel, (root / rel).read_bytes()) for rel in operator.files]
    if operator.task:  # flat, with the task as task_desc.py: how a benchmark run keeps custom/<op>/
        members = [("task_desc.py" if rel == operator.task else Path(rel).name, (root / rel).read_bytes())
                   for rel in operator.files]
    if operator.entry:
        members.append((ENTRY_FILE, json.dumps({"entry": operator.entry, "operator": operator.name}).encode()))
    data = archive.write_zip(members)
    if len(data) > MAX_BUNDLE_BYTES:
        raise SubmissionError(f"{operator.folder}: the bundle is {len(data)} bytes, over {MAX_BUNDLE_BYTES >> 20} MiB")
    return data
