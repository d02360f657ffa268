"""A test that finds a program it needs missing (shutil.which) goes through missing_service(), which
fails under CI=true, rather than calling pytest.skip, which would let CI pass without running it."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Docker is not part of the CI machine: docker-compose.yml and the Dockerfile are checked structurally there.
MAY_SKIP = {"worker/test_compose.py"}


def _calls(node: ast.AST) -> set[str]:
    return {ast.unparse(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}


def which_guards() -> dict[str, set[str]]:
    """Per test file, what the `if shutil.which(...) ...:` blocks call."""
    found: dict[str, set[str]] = {}
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.If) and "shutil.which" in _calls(node.test):
                found.setdefault(str(path.relative_to(TESTS)), set()).update(*(_calls(b) for b in node.body))
    return found


def test_the_scan_sees_the_known_guards():
    assert "missing_service" in which_guards()["faults/test_infrastructure.py"]


def test_a_missing_program_is_not_a_plain_skip():
    skipping = sorted(f for f, calls in which_guards().items() if "pytest.skip" in calls and f not in MAY_SKIP)
    assert not skipping, f"use tests.conftest.missing_service() instead of pytest.skip in {skipping}"
