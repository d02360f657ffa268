"""`crosscheck run CHECKOUT --list` and `--op NAME`: the operators of a checkout (docs/realops.md §5)."""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.intake import discover, submission, testmodule
from runtime import exit_codes
from runtime.errors import SubmissionError


def checkout_command(args: argparse.Namespace, run: Callable[..., int]) -> int:
    """`run` runs one loaded operator (runtime.cli.cli.run_command, passed in so this module does not import it)."""
    if args.list and not args.op and Path(args.path).suffix == ".py" and Path(args.path).is_file():
        return _print_test_file(Path(args.path))
    try:
        found = discover.discover(args.path, args.op or None)
    except SubmissionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.UNUSABLE
    if args.list:
        return _print_list(found, Path(args.path).resolve())
    return _run_each(args, found, run)


def operators_of_test_folder(path: str | Path) -> tuple[Path, list[discover.FoundOperator]] | None:
    """A checkout's test folder given as the path (`crosscheck run tests/ops/deepseek/ScaleAdd`): its checkout
    (the nearest ancestor holding `src/` and looking like a project: `tests/`, `pyproject.toml`, `setup.py` or
    `.git`, so never /usr for its /usr/src) and the operators `--op` would find there (a model folder's tests
    are one each: docs/realops.md §5), or None for any other path. A folder holding its own *_impl.py is a
    package of its own, as before."""
    folder = Path(path).resolve()
    if not folder.is_dir() or any(folder.glob("*_impl.py")):
        return None
    root = next((parent for parent in folder.parents if (parent / "src").is_dir()), None)
    if root is None or not any((root / mark).exists() for mark in ("tests", "pyproject.toml", "setup.py", ".git")):
        return None
    try:
        found = discover.discover(root)
    except SubmissionError:
        return None
    rel = folder.relative_to(root).as_posix()
    ops = [op for op in found if op.folder == rel]
    return (root, ops) if ops else None


def _print_list(found: list[discover.FoundOperator], root: Path) -> int:
    """Each operator, its route, how many cases and the file (or package folder) it comes from (docs/realops.md
    §1, §5)."""
    print(f"{'operator':<24} {'route':<8} {'cases':>5}  from")
    asked = collected = False
    for op in found:
        where = op.entry or op.folder
        count = str(len(op.cases)) if op.cases or op.route != "script" else "?"
        if op.route == "module" and op.entry and testmodule.parametrized(root / op.entry):
            count, collected = f"{count}+", True
        asked = asked or count == "?"
        print(f"{op.name:<24} {op.route:<8} {count:>5}  {where}" + (f"  ({op.problem})" if op.problem else ""))
    print(f"{len(found)} operator(s), {sum(op.route != 'none' for op in found)} runnable")
    if asked:
        print("?: the run asks the script itself (`--list`), else runs it whole")
    if collected:
        print("+: test functions with parametrize marks; the run collects each item pytest finds (a case each)")
    return exit_codes.OK if found else exit_codes.UNUSABLE


def _print_test_file(path: Path) -> int:
    """`crosscheck run test_x.py --list`: its test functions as cases, those marked skip said so
    (docs/realops.md §10); a file without them is a script the run asks (`--list`) or runs whole."""
    functions = [] if testmodule.answers_list(path) else testmodule.test_functions(path)
    if not functions:
        print(f"{path.name}: script; the run asks it for its cases (`--list`), else runs it whole")
        return exit_codes.OK
    marks = testmodule.skip_marks(path)
    print(f"{path.name}: module, {len(functions)} test function(s), {len(marks)} marked skip")
    for name in functions:
        mark = f"  (marked skip{': ' + marks[name] if marks[name] else ''}; runs only with --case)" \
            if name in marks else ""
        print(f"  {name}{mark}")
    return exit_codes.OK


def _run_each(args: argparse.Namespace, found: list[discover.FoundOperator], run_command: Callable[..., int]) -> int:
    """Each chosen operator in turn, one report each; the worst exit code."""
    codes: list[int] = []
    reports: list[Any] = []
    for op in found:
        try:
            loaded = submission.load_operator(args.path, op)
        except SubmissionError as exc:
            print(f"error: {op.name}: {exc}", file=sys.stderr)
            codes.append(exit_codes.UNUSABLE)
            continue
        codes.append(run_command(args, loaded=loaded, reports=reports))
    if args.json is not None:
        data = [json.loads(r.to_json()) for r in reports]
        text = json.dumps(data[0] if len(data) == 1 else {"reports": data}, indent=1)
        if str(args.json) == "-":
            sys.stdout.write(text + "\n")
        else:
            args.json.write_text(text)
    return max(codes, default=exit_codes.UNUSABLE)
