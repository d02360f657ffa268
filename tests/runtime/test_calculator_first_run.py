"""The first `crosscheck run` on a host without the graph-verify calculator builds it instead of giving
every case `graph unavailable` (docs/pypto.md §3)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow  # real pypto jobs


def _run(tmp_path: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "runtime", "run", str(EXAMPLES / "scale_add"), "--no-daemon",
                           "--cache-dir", str(cache), *extra], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=600)


def test_a_run_with_the_calculator_cached_builds_nothing(tmp_path: Path, calculator_cache: Path) -> None:
    done = _run(tmp_path, calculator_cache)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "building pypto's graph-verify calculator" not in done.stderr
    assert "graph verify unavailable" not in done.stdout


def test_a_build_that_fails_is_a_warning_and_every_case_says_why(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # the cache dir cannot be made under a file: the build fails at once
    done = _run(tmp_path, blocker / "cache")
    assert "building pypto's graph-verify calculator once for this host" in done.stderr
    assert "warning: the calculator build failed, so graph verify is unavailable in this run:" in done.stderr
    assert "Not a directory" in done.stderr
    assert done.returncode == 0, done.stdout + done.stderr  # the kernel is fine; only the evidence is missing
    assert "sim_output_unwritten" in done.stdout
    assert "graph verify unavailable (all cases): the graph-verify calculator is not built" in done.stdout.replace("\n", " ")


def test_no_graph_verify_never_builds(tmp_path: Path) -> None:
    done = _run(tmp_path, tmp_path / "cache", "--no-graph-verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "building" not in done.stderr and not (tmp_path / "cache" / "calculator").exists()
