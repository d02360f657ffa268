"""Large cases within the defaults (docs/run-daemon.md, "Large cases"): the default memory limit follows the
host, the report states it, and a case too large to share the host runs alone."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from runtime.fence import host_memory
from runtime.runner import RunOptions, run_submission
from runtime.warm import WarmParent
from tests.conftest import EXAMPLES


def test_the_default_memory_limit_is_a_share_of_the_host():
    total = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                 if line.startswith("MemTotal:"))
    assert 0 < host_memory.host_memory_bytes() <= total
    assert host_memory.default_memory_bytes() == int(host_memory.host_memory_bytes() * host_memory.MEMORY_SHARE)
    assert f"{host_memory.host_memory_bytes() / 2**30:.1f} GiB" in host_memory.describe()


def test_which_cases_run_alone():
    gib = 2**30
    assert not host_memory.runs_alone(3 * gib, 8 * gib, 1)  # one at a time anyway
    assert host_memory.runs_alone(2 * gib, 8 * gib, 2)  # 8 GiB of job beside another: over its 4 GiB share
    assert not host_memory.runs_alone(gib // 2, 8 * gib, 2)


class CountingParent(WarmParent):
    """The real warm parent; it notes how many jobs each batch sent and how many ran at once."""

    def __init__(self) -> None:
        super().__init__("sim")
        self.batches: list[tuple[int, int]] = []

    def run_jobs(self, requests, parallel):  # type: ignore[no-untyped-def]
        self.batches.append((len(requests), parallel))
        yield from super().run_jobs(requests, parallel)


@pytest.mark.slow
def test_a_case_too_large_to_share_runs_alone_with_the_same_verdict():
    # 8 GiB per case among 20,000 at once leaves ~420 KiB each: scale_add_64x256's job (~770 KiB) runs alone,
    # scale_add_32x64's (~96 KiB) shares.
    with CountingParent() as parent, tempfile.TemporaryDirectory() as work:
        options = RunOptions(graph_verify=False, work_dir=Path(work), parallel=20_000, memory_bytes=8 * 2**30,
                             memory_from="a test's 8 GiB")
        report = run_submission(EXAMPLES / "scale_add", options, warm=parent)
    assert parent.batches == [(1, 20_000), (1, 1)]
    assert [c.case for c in report.cases] == ["scale_add_32x64", "scale_add_64x256"]  # the report keeps case order
    assert {c.verdict for c in report.cases} == {"sim_output_unwritten"}
    assert report.environment.sandbox["memory_limit_gib"] == 8.0
    assert report.environment.sandbox["memory_limit_from"] == "a test's 8 GiB"
