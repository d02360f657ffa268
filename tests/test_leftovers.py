"""The run fails when a test leaves a crosscheck dir in the temp dir (tests/leftovers.py)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO


# Under pytest-xdist (when installed) the controller checks, after its workers made the dir.
RUNNERS = [[]] + ([["-p", "no:benchmark", "-n", "2"]] if importlib.util.find_spec("xdist") else [])


@pytest.mark.parametrize("runner", RUNNERS, ids=lambda r: "xdist" if r else "plain")
def test_a_dir_left_behind_fails_the_run_and_is_named(tmp_path: Path, runner: list[str]) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the inner run makes its own run dir in here
    env.pop("PYTEST_DEBUG_TEMPROOT", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *runner,
                           "tests/data/leaves_a_job_dir.py"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # its one test passed; the check failed the run
    assert "1 passed" in done.stdout and "crosscheck-job0-left-behind" in done.stdout, done.stdout
    assert not list(tmp_path.glob("tests-run-*")), "the run dir is removed either way"


def test_this_run_makes_its_temp_dirs_in_a_run_dir_of_its_own() -> None:
    assert Path(tempfile.gettempdir()).name.startswith("tests-run-")
    assert os.environ["TMPDIR"] == tempfile.gettempdir()
