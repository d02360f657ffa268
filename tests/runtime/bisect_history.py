"""Build a real git repository whose history changes one operator (scale_add from examples/) commit by
commit: used by test_bisect.py and bench/bisect_search.py."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scale_add"
OP_DIR = "ops/scale_add"
RIGHT = "out[:] = x * SCALE + y"
WRONG = "out[:] = x * 3.0 + y  # examples/wrong_maths: the specification says x * 2.0"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=ENV).stdout.strip()


def operator_files(kernel_line: str = RIGHT, note: str = "", cases: list[str] | None = None) -> dict[str, str]:
    """scale_add's files, its kernel's body line replaced; `cases` keeps only those ids."""
    impl = (EXAMPLE / "scale_add_impl.py").read_text().replace(RIGHT, kernel_line)
    case_file = json.loads((EXAMPLE / "test_cases.json").read_text())
    if cases:
        case_file["test_cases"] = [c for c in case_file["test_cases"] if c["id"] in cases]
    return {f"{OP_DIR}/scale_add_impl.py": impl + note,
            f"{OP_DIR}/scale_add_golden.py": (EXAMPLE / "scale_add_golden.py").read_text(),
            f"{OP_DIR}/test_cases.json": json.dumps(case_file, indent=1)}


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    """Write (or with None remove) files, commit them all, return the full sha."""
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            git(repo, "rm", "-r", "-q", rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", rel)
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path
