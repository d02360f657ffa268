"""The operators of a pypto-gym benchmark run, each with its KernelBench task (docs/kernelbench.md §5).

    discover(folder) -> list[FoundOperator]    route "task"; one per task, named `<level>-<task>`
    content_sha256(folder, operator) -> str     the digest its bundle gets on the server (flat, task_desc.py)

Two layouts: a run's report dir, where `report/<level>/<op>/custom/<op>/` holds the operator with its
`task_desc.py` (and `result.json`, the gym's own verdict, beside `custom/`); and `custom/<level>/<op>/`
operator dirs beside the KernelBench tasks `<level>/<N>_<Name>.py`, paired by the gym's operator name.
Names carry the level and the task's stem, so two tasks with one operator name (33_ and 39_
Gemm_Scale_BatchNorm) stay two operators; an operator dir two tasks could be for keeps its place as
route "none" with the reason.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from runtime.errors import SubmissionError
from runtime.intake import kernelbench
from runtime.intake.discover import FoundOperator

LEVEL = re.compile(r"^(level\d+|pto_case)$")
RESULT_FILE = "result.json"  # the gym's verdict for the case, beside custom/ in a run's report dir
SKIP = {"__pycache__", ".git", ".cache", "node_modules"}
MAX_OPERATORS = 2000


def _walk(root: Path) -> list[Path]:
    found = []
    for here, dirs, _files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith(("output", ".")))
        found.append(Path(here))
        if len(found) > 50 * MAX_OPERATORS:
            raise SubmissionError(f"{root}: too many folders to be a benchmark run")
    return found


def _level(rel: Path) -> str:
    return next((part for part in rel.parts if LEVEL.match(part)), "")


def _files(root: Path, op_dir: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in op_dir.iterdir()
                  if p.is_file() and not p.is_symlink() and p.suffix == ".py")


def _task_stem(op_dir: Path, op: str) -> str:
    """The task's KernelBench stem from the gym's result.json beside custom/, else the operator's name."""
    try:
        raw = json.loads((op_dir.parent.parent / RESULT_FILE).read_text(encoding="utf-8"))
        source = str(raw.get("source_file") or raw.get("case_id") or "")
    except (OSError, ValueError, AttributeError):
        source = ""
    return Path(source).stem if source else op


def discover(folder: Path) -> list[FoundOperator]:
    root = Path(folder).resolve()
    if not root.is_dir():
        raise SubmissionError(f"{folder}: not a folder (give a benchmark run's report dir or its root)")
    dirs = _walk(root)
    tasks: dict[tuple[str, str], list[Path]] = {}
    for d in dirs:
        if LEVEL.match(d.name):
            for task in sorted(d.glob("*.py")):
                if task.name[0].isdigit():
                    tasks.setdefault((d.name, kernelbench.op_name(task.stem)), []).append(task)
    found: list[FoundOperator] = []
    for d in dirs:
        ops = kernelbench.impl_ops(d) if d.is_dir() else []
        if len(ops) != 1:
            continue
        rel, op = d.relative_to(root), ops[0]
        level = _level(rel) or "benchmark"
        if (d / kernelbench.TASK_FILE).is_file():
            task_rel = (d / kernelbench.TASK_FILE).relative_to(root).as_posix()
            found.append(_operator(f"{level}-{_task_stem(d, op)}", rel, _files(root, d), task_rel))
            continue
        candidates = tasks.get((level, op), [])
        if len(candidates) == 1:
            task = candidates[0]
            found.append(_operator(f"{level}-{task.stem}", rel, _files(root, d), task.relative_to(root).as_posix()))
        elif len(candidates) > 1:
            names = ", ".join(t.name for t in candidates)
            found.append(FoundOperator(name=f"{level}-{op}", route="none", folder=rel.as_posix(), problem=(
                f"{len(candidates)} tasks name operator {op} ({names}): keep the task beside it as task_desc.py")))
    if len(found) > MAX_OPERATORS:
        raise SubmissionError(f"{folder}: {len(found)} operators, over {MAX_OPERATORS}")
    _unique(found)
    return sorted(found, key=lambda o: o.name)


def _operator(name: str, rel: Path, files: list[str], task: str) -> FoundOperator:
    return FoundOperator(name=name, route="task", folder=rel.as_posix(), files=sorted({*files, task}),
                         cases=[kernelbench.CASE_ID], task=task)


def _unique(found: list[FoundOperator]) -> None:
    seen: dict[str, int] = {}
    for op in found:
        n = seen.get(op.name, 0)
        seen[op.name] = n + 1
        if n:
            op.name = f"{op.name}-{n + 1}"  # the same task kept twice under one run: both run, named apart


def content_sha256(folder: Path, operator: FoundOperator) -> str:
    """The submission digest (runtime.intake.submission) of the operator's bundle as `discover.pack` lays it out."""
    root = Path(folder).resolve()
    flat = sorted((kernelbench.TASK_FILE if rel == operator.task else Path(rel).name, rel) for rel in operator.files)
    h = hashlib.sha256()
    for name, rel in flat:
        h.update(name.encode() + b"\0")
        h.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return h.hexdigest()
