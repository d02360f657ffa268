"""A KernelBench task and the operator written for it, as pypto-gym's agent benchmark has them (docs/kernelbench.md §1).

Public API:

    op_name(task_stem) -> str                 the gym's operator name of a task file
    is_operator_dir(folder) -> bool           `<op>_impl.py` with `task_desc.py` beside it
    load(op_dir, task=None) -> TaskOperator   its files, entries and case (runtime.intake.submission makes the Submission)

The task (`Model`, `get_inputs`, `get_init_inputs`) is never imported here: it is submitted code, and
only the job runs it (runtime/job/kernelbench.py).
"""
from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import SubmissionError
from runtime.intake import python_ast
from runtime.intake.cases import CaseSpec, InputSpec

TASK_FILE = "task_desc.py"  # the task beside its operator in a benchmark run's custom/<op>/
SEED = 42
RTOL = ATOL = 1e-3  # the gym verifier's assert_close defaults
CASE_ID = "task"  # the task's own get_inputs(); a CASES entry is "cases<N>"
MAX_FILES = 50
MAX_SHAPE_CASES = 64


@dataclass
class TaskOperator:
    name: str
    root: Path  # the folder holding both the operator dir and the task
    files: list[str]  # relative to root
    impl: tuple[str, str]  # (file, ModelNew or <op>_wrapper)
    task: str  # the task file, relative to root
    sys_path: list[str]  # the operator's and the task's folders: they import each other flat
    cases: list[CaseSpec]


def op_name(task_stem: str) -> str:
    """`23_Softmax` -> `Softmax`; `1_Conv2d_ReLU_BiasAdd` -> `Conv2d_ReLU_BiasAdd`; `3D_conv` -> `op_3D_conv`."""
    name = re.sub(r"^\d+_", "", task_stem)
    name = re.sub(r"\W+", "_", name).strip("_")
    if name and name[0].isdigit():
        name = f"op_{name}"
    return name


def impl_ops(folder: Path) -> list[str]:
    """Operator names of the `<op>_impl.py` files in `folder` (not the `<op>_pypto_impl.py` companions)."""
    return sorted(p.name[: -len("_impl.py")] for p in folder.glob("*_impl.py")
                  if not p.name.endswith("_pypto_impl.py") and p.is_file())


def is_operator_dir(folder: Path) -> bool:
    return folder.is_dir() and (folder / TASK_FILE).is_file() and bool(impl_ops(folder))


def load(op_dir: Path, task: Path | None = None) -> TaskOperator:
    """One operator dir and its task. Raises SubmissionError naming what is missing."""
    op_dir = Path(op_dir).resolve()
    if not op_dir.is_dir():
        raise SubmissionError(f"{op_dir}: not a folder (give the operator dir holding <op>_impl.py)")
    if task is not None and not Path(task).is_file():
        raise SubmissionError(f"--task {task}: no such file (a KernelBench task, e.g. level1/19_ReLU.py)")
    task = Path(task).resolve() if task else op_dir / TASK_FILE
    if not task.is_file():
        raise SubmissionError(f"{op_dir.name}: no task: give --task TASK.py (a KernelBench file), or put it "
                              f"beside the operator as {TASK_FILE}")
    name = _operator_name(op_dir, task)
    impl = op_dir / f"{name}_impl.py"
    if not impl.is_file():
        raise SubmissionError(f"{op_dir.name}: missing {impl.name} (the task {task.name} names operator '{name}'; "
                              f"the gym needs <op>_impl.py exporting {name}_wrapper)")
    _check_task(task)
    _check_wrapper(impl, f"{name}_wrapper")
    root = Path(os.path.commonpath([op_dir, task.parent]))
    files = sorted({p.relative_to(root).as_posix() for p in _operator_files(op_dir)} | {task.relative_to(root).as_posix()})
    pypto_impl = op_dir / f"{name}_pypto_impl.py"
    entry = ((_rel(pypto_impl, root), "ModelNew") if pypto_impl.is_file() and _defines(pypto_impl, "ModelNew")
             else (_rel(impl, root), f"{name}_wrapper"))
    flat = sorted({_rel(op_dir, root), _rel(task.parent, root)})  # the two files run flat beside the task
    return TaskOperator(name=name, root=root, files=files, impl=entry, task=_rel(task, root), sys_path=flat,
                        cases=_cases(task))


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def _operator_name(op_dir: Path, task: Path) -> str:
    ops = impl_ops(op_dir)
    if task.name != TASK_FILE:
        return op_name(task.stem)
    if len(ops) != 1:
        raise SubmissionError(f"{op_dir.name}: {len(ops)} *_impl.py files ({', '.join(ops) or 'none'}); "
                              f"give --task with the KernelBench file, whose name names the operator")
    return ops[0]


def _operator_files(op_dir: Path) -> list[Path]:
    files = [p for p in sorted(op_dir.iterdir()) if p.is_file() and not p.is_symlink() and p.suffix == ".py"]
    if len(files) > MAX_FILES:
        raise SubmissionError(f"{op_dir.name}: too many .py files ({len(files)} > {MAX_FILES})")
    return files


def _parse(path: Path) -> ast.Module | None:
    try:
        return python_ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError):
        return None  # the syntax stage reports it with its line


def _defines(path: Path, name: str) -> bool:
    """`name` is a def, class or assignment at the file's top level."""
    tree = _parse(path)
    return tree is not None and any(
        getattr(n, "name", None) == name
        or (isinstance(n, ast.Assign) and any(getattr(t, "id", None) == name for t in n.targets)) for n in tree.body)


def _check_task(task: Path) -> None:
    tree = _parse(task)
    if tree is None:
        return
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not _defines(task, n)]
    if missing:
        raise SubmissionError(f"{task.name}: not a KernelBench task: missing {', '.join(missing)} "
                              "(a task defines Model(nn.Module), get_inputs() and get_init_inputs())")


def _check_wrapper(impl: Path, wrapper: str) -> None:
    tree = _parse(impl)
    if tree is not None and not _defines(impl, wrapper):
        raise SubmissionError(f"{impl.name}: missing function '{wrapper}' (the gym's operator contract)")


def _cases(task: Path) -> list[CaseSpec]:
    """The task's get_inputs() after the gym's seed, then one case per `CASES` entry (its input shapes)."""
    cases = [CaseSpec(id=CASE_ID, seed=SEED, inputs=[], rtol=RTOL, atol=ATOL,
                      description="the task's get_inputs() after torch.manual_seed(42), as the gym verifies it")]
    for i, shapes in enumerate(shape_cases(_literal(task, "CASES"), task.name)):
        inputs = [InputSpec(f"input{j}", shape, "float32", init="task") for j, shape in enumerate(shapes)]
        cases.append(CaseSpec(id=f"cases{i}", seed=SEED, inputs=inputs, rtol=RTOL, atol=ATOL,
                              description=f"CASES[{i}]: the task's inputs drawn at shapes {shapes}"))
    return cases


def shape_cases(raw: object, where: str) -> list[list[list[int]]]:
    """`CASES` as the gym writes it: a string holding JSON (`[[[M, K], [K, N]], ...]`) or one `- [...]` line per case."""
    if raw is None:
        return []
    if not isinstance(raw, str):
        raise SubmissionError(f"{where}: CASES must be a string (JSON, or one '- [...]' line per case), as the gym reads it")
    text = raw.strip()
    try:
        parsed = json.loads(text) if text.startswith("[") else \
            [json.loads(line.strip()[1:]) for line in text.splitlines() if line.strip().startswith("-")]
    except ValueError as exc:
        raise SubmissionError(f"{where}: CASES is not JSON: {exc}") from None
    ok = isinstance(parsed, list) and all(isinstance(c, list) and all(
        isinstance(s, list) and all(isinstance(d, int) and 0 <= d <= 2**31 for d in s) for s in c) for c in parsed)
    if not ok or len(parsed) > MAX_SHAPE_CASES:
        raise SubmissionError(f"{where}: CASES must be a list of cases, each a list of input shapes (lists of "
                              f"non-negative ints), at most {MAX_SHAPE_CASES}")
    return parsed


def _literal(path: Path, name: str) -> object:
    tree = _parse(path)
    for node in tree.body if tree else []:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None
