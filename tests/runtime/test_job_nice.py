"""A case runs at the niceness it is given (RunOptions.nice; a worker's JOB_NICE): the kernel, and the programs it
starts, yield the CPU to the other processes of their scheduling group, the worker's heartbeats first
(docs/platform.md §5)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES
from worker.config import WorkerSettings
from worker.lifecycle import _make_context

pytestmark = pytest.mark.slow

CHECK = '''
import os


def _runs_at(expected):
    if os.getpriority(os.PRIO_PROCESS, 0) != expected:
        raise RuntimeError(f"the case runs at niceness {os.getpriority(os.PRIO_PROCESS, 0)}, not {expected}")


'''


def test_a_case_runs_at_the_niceness_it_is_given(warm_sim, calculator_cache, tmp_path: Path):
    expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)
    op = tmp_path / "relu"
    shutil.copytree(EXAMPLES / "relu", op)
    impl = op / "relu_impl.py"
    text = impl.read_text().replace("def relu_wrapper(x: torch.Tensor) -> torch.Tensor:\n",
                                    f"def relu_wrapper(x: torch.Tensor) -> torch.Tensor:\n    _runs_at({expected})\n")
    impl.write_text(CHECK + text)
    report = run_submission(op, RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "w", nice=7),
                            warm=warm_sim)
    assert [c.verdict for c in report.cases] == ["sim_garbage_graph_ok"] * len(report.cases), \
        [(c.verdict, c.error) for c in report.cases]


def test_a_worker_gives_its_jobs_job_nice(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("JOB_NICE", raising=False)
    monkeypatch.setattr("worker.lifecycle.get_settings", lambda: WorkerSettings())
    assert _make_context("w1@host").job_nice == 10
    monkeypatch.setattr("worker.lifecycle.get_settings", lambda: WorkerSettings(job_nice=3))
    assert _make_context("w1@host").job_nice == 3
    with pytest.raises(ValueError, match="0 to 19"):
        WorkerSettings(job_nice=20)
