"""A worker started with a private umask (077, common on hardened hosts) loses no evidence.

The harness creates the job's stdout/stderr as root and reads them back as the job's uid
(runtime.fence.jobfiles), so their modes must not come from the caller's umask.
"""
from __future__ import annotations

import os

import pytest

from runtime.runner import RunOptions, run_submission
from tests.hostile.evidence_kit import NORMAL, package

pytestmark = pytest.mark.slow


def test_a_private_umask_keeps_the_jobs_stdout(tmp_path):
    pkg = package(tmp_path, "print('HELLO FROM THE KERNEL', flush=True)\n" + NORMAL)
    old = os.umask(0o077)  # the warm parent this run starts inherits it
    try:
        report = run_submission(pkg, RunOptions(work_dir=tmp_path / "w", graph_verify=False))
    finally:
        os.umask(old)
    case = report.cases[0]
    assert case.evidence_dir, case
    copied = os.path.join(case.evidence_dir, "stdout.txt")
    assert os.path.isfile(copied), sorted(os.listdir(case.evidence_dir))
    with open(copied, encoding="utf-8") as f:
        assert "HELLO FROM THE KERNEL" in f.read()
