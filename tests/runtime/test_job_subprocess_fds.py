"""A program the job starts opens and closes its own fds freely, whatever numbers they get: the syscall filter's
rules on the event pipe's fd (runtime.fence.syscalls) never meet another fd, since the pipe sits above the job's fd
limit (runtime.fence.sandbox.park_event_fd). Before, g++ run by pypto got the pipe's old number for a pipe of its
own, could not close it, and hung."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

# Opens 40 fds (numbers from 3 up), closes each, and dup2s one over another: what compilers and shells do.
CHILD = ("import os; fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(40)]; os.dup2(fds[0], fds[5]); "
         "[os.close(f) for f in fds]; print('closed', len(fds))")
WRAPPER = f'''
import subprocess
import sys


def _child_closes_its_fds():
    done = subprocess.run([sys.executable, "-c", {CHILD!r}], capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or "closed 40" not in done.stdout:
        raise RuntimeError("a program the job started could not close its own fds: " + done.stderr[-500:])


'''


def test_a_program_the_job_starts_closes_any_fd_of_its_own(warm_sim, calculator_cache, tmp_path: Path):
    op = tmp_path / "relu"
    shutil.copytree(EXAMPLES / "relu", op)
    impl = op / "relu_impl.py"
    text = impl.read_text()
    text = text.replace("def relu_wrapper(x: torch.Tensor) -> torch.Tensor:\n",
                        "def relu_wrapper(x: torch.Tensor) -> torch.Tensor:\n    _child_closes_its_fds()\n")
    impl.write_text(WRAPPER + text)
    report = run_submission(op, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w"), warm=warm_sim)
    assert [c.verdict for c in report.cases] == ["sim_garbage_graph_ok"] * len(report.cases), \
        [(c.verdict, c.error) for c in report.cases]
