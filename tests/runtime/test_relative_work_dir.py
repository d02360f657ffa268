"""`crosscheck run --work-dir DIR` with a relative DIR: the jobs find their files (it once doubled the path)."""
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_a_relative_work_dir_runs_every_case(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "runtime", "run", str(EXAMPLES / "scale_add"), "--work-dir", "wk",
                           "--no-graph-verify", "--keep"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not found" not in done.stdout + done.stderr
    assert list((tmp_path / "wk").glob("jobs/*"))  # the jobs ran under the relative dir
