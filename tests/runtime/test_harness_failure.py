"""Our failures are infrastructure (issue 33): an exception in the harness's own code, in the job or its leader,
is `not_run` at stage `harness` (exit 3, infrastructure) with its traceback, never `crash` (a kernel defect).

The job's view of the host is made to lack what our code needs: pypto's package metadata is hidden from the job
(`hide_paths`, as a service hides its data dir), so `importlib.metadata.version("pypto")` raises in the harness's
graph-verify setup, as it did for every case of a submission on a host whose view lacked it. Before the fix every
case read `crash`.
"""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from runtime import exit_codes, verdicts
from runtime.fence.jobenv import JobDirs
from runtime.judge import outcome
from runtime.runner import RunOptions, run_submission
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow


def test_metadata_hidden_from_the_job_is_infrastructure(warm_sim, calculator_cache, tmp_path):
    dist = Path(str(metadata.distribution("pypto").locate_file(""))) / f"pypto-{metadata.version('pypto')}.dist-info"
    assert dist.is_dir(), dist
    report = run_submission(EXAMPLES / "relu", RunOptions(cache_dir=calculator_cache, work_dir=tmp_path / "work",
                                                          timeout_s=120, cases=["relu_32x64"], hide_paths=[dist]),
                            warm=warm_sim)
    case = report.cases[0]
    assert (case.verdict, case.stage) == (verdicts.NOT_RUN, verdicts.HARNESS_STAGE), (case.verdict, case.verdict_reason)
    assert exit_codes.of_cases(report.cases, "sim") == exit_codes.INFRA
    assert case.error is not None and case.error.type == "PackageNotFoundError", case.error
    assert "graph_verify.py" in case.error.traceback, case.error.traceback


def test_a_leader_that_failed_is_infrastructure(tmp_path):
    """The leader's own exception (runtime.warm.parent) comes back with its traceback, never as a crash."""
    ctx = outcome.JobContext(operator="relu", case="c", mode="sim", dirs=JobDirs(tmp_path))
    report = {"leader_error": "OSError: [Errno 28] No space left on device",
              "leader_traceback": 'Traceback (most recent call last):\n  File "runtime/warm/leader.py", line 60\n'}
    case = outcome.build(ctx, report)
    assert (case.verdict, case.stage) == (verdicts.NOT_RUN, verdicts.HARNESS_STAGE), (case.verdict, case.verdict_reason)
    assert exit_codes.of_case(case.verdict, "sim", case.stage) == exit_codes.INFRA
    assert "runtime/warm/leader.py" in case.error.traceback
