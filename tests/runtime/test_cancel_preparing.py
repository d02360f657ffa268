"""A cancel stops a run in every phase, preparing its cases included (issue 25: a job of 100,000 cases stayed
`running` with no progress after its cancel, while it prepared its cases)."""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

CASES = 300


def _many_cases(root: Path) -> Path:
    pkg = root / "relu"
    shutil.copytree(EXAMPLES / "relu", pkg)
    spec = json.loads((pkg / "test_cases.json").read_text())
    one = spec["test_cases"][0]
    spec["test_cases"] = [{**one, "id": f"relu_{i}"} for i in range(CASES)]
    (pkg / "test_cases.json").write_text(json.dumps(spec))
    return pkg


def test_a_cancel_while_cases_are_prepared_stops_the_preparing(warm_sim, tmp_path):
    pkg, work = _many_cases(tmp_path), tmp_path / "work"
    jobs = work / "jobs"
    answer: dict[str, object] = {}

    def run() -> None:
        answer["report"] = run_submission(pkg, RunOptions(work_dir=work, graph_verify=False, timeout_s=60),
                                          warm=warm_sim)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        while runner.is_alive() and not (jobs.is_dir() and any(jobs.iterdir())):
            runner.join(0.01)  # the first case's job dir: the preparing has begun
        warm_sim.cancel()
        runner.join(300)
    finally:
        warm_sim.cancelled = False  # the session's warm parent serves the next test
    assert not runner.is_alive()
    report = answer["report"]
    assert report.cancelled and report.cases == []
    prepared = len(list(jobs.iterdir()))
    assert 0 < prepared < CASES, prepared  # it stopped preparing; on main all 300 were prepared first


def test_a_cancel_before_the_run_prepares_nothing(warm_sim, tmp_path):
    warm_sim.cancel()
    try:
        report = run_submission(_many_cases(tmp_path), RunOptions(work_dir=tmp_path / "work", graph_verify=False),
                                warm=warm_sim)
    finally:
        warm_sim.cancelled = False
    assert report.cancelled and report.cases == []
    assert not (tmp_path / "work" / "jobs").exists() or not any((tmp_path / "work" / "jobs").iterdir())
