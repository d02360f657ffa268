"""The freed-memory scrub (runtime/job/child.py) is the harness's work inside the job: it allocates at
most its share (1/SCRUB_SHARE) of the job's memory limit, so it is never what hits the limit.
What it allocates is measured by torch's own profiler, allocation by allocation."""
from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile

from runtime.job.child import SCRUB_SHARE, _scrub_freed_memory

MIB = 2**20


def _bytes_allocated(like: list[torch.Tensor], budget: int) -> int:
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        _scrub_freed_memory(like, budget)
    return sum(max(e.self_cpu_memory_usage, 0) for e in prof.events())


def test_the_scrub_stays_within_its_share_of_a_small_limit():
    budget = 48 * MIB // SCRUB_SHARE  # a 48 MiB job: 6 MiB for the scrub
    like = [torch.zeros(MIB // 4), torch.zeros(MIB), torch.zeros(4 * MIB)]  # 1, 4 and 16 MiB of float32
    used = _bytes_allocated(like, budget)
    assert 0 < used <= budget, f"the scrub allocated {used} bytes; its budget is {budget}"


def test_the_rounds_stop_at_the_budget():
    four_mib = [torch.zeros(MIB)]
    assert _bytes_allocated(four_mib, 8 * MIB) == 8 * MIB  # two of the four rounds fit
    assert _bytes_allocated(four_mib, 4 * MIB - 1) == 0  # a block larger than the budget is left alone
