"""Run by tests/test_leftovers.py only (not collected: no test_ prefix): a test that leaves a job dir."""
import tempfile
from pathlib import Path


def test_leaves_a_job_dir() -> None:
    (Path(tempfile.gettempdir()) / "crosscheck-job0-left-behind").mkdir()
