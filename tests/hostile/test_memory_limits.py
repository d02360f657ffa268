"""A job's memory and processes are limited as a whole, by its cgroup (issue 8 item 7).

Before the fix the limit was RLIMIT_AS per process: children of one job could each use the whole
limit, and a kernel whose threads reserved a large address space, but used little memory, failed as
a `crash`. Each attack runs through the real runtime; the memory hog also runs against the unfixed
leader (tests/hostile/unfixed_parent.py), where it gets its memory.
"""
from __future__ import annotations

import pytest

from runtime import verdicts
from tests.hostile.evidence_kit import NORMAL, package, run
from tests.hostile.sandbox_kit import processes_of
from tests.hostile.unfixed_sandbox import UnfixedLimitsParent, WatchdogWarmParent

pytestmark = pytest.mark.slow

GIB = 2**30
# Three children each touch 900 MiB and hold it: 2.7 GiB in all, under a 2 GiB limit per case.
CHILDREN_HOG = '''
import os, resource, time
r, w = os.pipe()
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(900 * 2**20)
        block[::4096] = b"x" * len(range(0, len(block), 4096))
        os.write(w, b"%08d" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB
        time.sleep(600)
        os._exit(0)
    kids.append(pid)
os.close(w)
held = []
while len(held) < 3:
    got = os.read(r, 8)
    if not got:
        break
    held.append(int(got))
for pid in kids:
    os.kill(pid, 9)
if len(held) == 3:
    raise RuntimeError(f"HOG held {sum(held) / 2**20:.2f} GiB")
''' + NORMAL

# 16 GiB of address space reserved, 64 MiB of it used: what pypto's thread pools look like.
HUGE_VIRTUAL = '''
import mmap
area = mmap.mmap(-1, 16 * 2**30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0))
for offset in range(0, 64 * 2**20, 4096):
    area[offset] = 1
''' + NORMAL

FORK_BOMB = '''
import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
    except OSError:
        time.sleep(0.01)
'''


def test_children_hogging_memory_are_stopped_as_a_resource_limit(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", CHILDREN_HOG), warm_sim, tmp_path / "w", memory_bytes=2 * GIB)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    assert "memory limit" in case.verdict_reason and "--memory GIB" in case.verdict_reason
    assert raw["memory_limit"].startswith("cgroup") and raw["resource_limit"]["limit"] == "memory"
    assert processes_of(raw["isolation"]["uid"]) == []


def test_without_a_cgroup_the_watchdog_stops_the_children(tmp_path):
    with WatchdogWarmParent("sim") as warm:
        case, raw = run(package(tmp_path / "op", CHILDREN_HOG), warm, tmp_path / "w", memory_bytes=2 * GIB)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    assert raw["memory_limit"] == "rss watchdog" and "memory (watchdog)" in case.verdict_reason
    assert processes_of(raw["isolation"]["uid"]) == []


def test_the_unfixed_limits_let_the_children_hog(tmp_path):
    with UnfixedLimitsParent("sim") as warm:
        case, _raw = run(package(tmp_path / "op", CHILDREN_HOG), warm, tmp_path / "w", memory_bytes=2 * GIB)
    assert case.error is not None and "HOG held" in case.error.message, (case.verdict, case.error)
    held = float(case.error.message.split("HOG held ")[1].split()[0])
    assert held > 2.0


def test_a_huge_but_light_address_space_runs(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", HUGE_VIRTUAL), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert raw["peak_memory_bytes"] < 2 * GIB


def test_the_unfixed_address_space_limit_breaks_it(tmp_path):
    with UnfixedLimitsParent("sim") as warm:
        case, _raw = run(package(tmp_path / "op", HUGE_VIRTUAL), warm, tmp_path / "w")
    assert case.verdict == verdicts.STRUCTURAL_ERROR and "Cannot allocate memory" in case.error.message


def test_a_fork_bomb_is_stopped_at_the_process_limit(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", FORK_BOMB), warm_sim, tmp_path / "w", nproc=64, timeout_s=120)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    assert "processes limit" in case.verdict_reason and "--processes N" in case.verdict_reason
    assert raw["peak_processes"] <= 64
    assert processes_of(raw["isolation"]["uid"]) == []


def test_without_a_cgroup_the_watchdog_stops_a_fork_bomb(tmp_path):
    with WatchdogWarmParent("sim") as warm:
        case, raw = run(package(tmp_path / "op", FORK_BOMB), warm, tmp_path / "w", nproc=64, timeout_s=120)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    assert raw["memory_limit"] == "rss watchdog" and "processes limit" in case.verdict_reason
    assert processes_of(raw["isolation"]["uid"]) == []


def test_a_kernel_runs_within_the_default_limits(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", NORMAL), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    print(f"peak memory {raw['peak_memory_bytes'] / 2**20:.0f} MiB, peak processes {raw['peak_processes']}")
