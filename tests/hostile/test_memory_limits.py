"""A job's memory and processes are limited as a whole, by its cgroup (issue 8 item 7).

Before the fix the limit was RLIMIT_AS per process: children of one job could each use the whole
limit, and a kernel whose threads reserved a large address space, but used little memory, failed as
a `crash`. Each attack runs through the real runtime; the memory hog also runs against the unfixed
leader (tests/hostile/unfixed_parent.py), where it gets its memory.
"""
from __future__ import annotations

import pytest

from runtime import verdicts
from runtime.warm.client import MALLOC_ARENA_MAX
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

# Eight threads hold malloc'd blocks at once, each in the arena glibc gave it; then the job counts
# the arenas (malloc_info) and reads MALLOC_ARENA_MAX from its exec environment strings on the stack
# page (its os.environ is the job's own, /proc/self/environ is closed to the job uid).
ARENAS = r'''
import ctypes, threading

def arenas():
    libc = ctypes.CDLL(None)
    together = threading.Barrier(8)

    def hold():
        blocks = [bytearray(100_000) for _ in range(20)]
        together.wait()
        del blocks

    threads = [threading.Thread(target=hold) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    libc.open_memstream.restype = ctypes.c_void_p
    buf, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = ctypes.c_void_p(libc.open_memstream(ctypes.byref(buf), ctypes.byref(size)))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    count = ctypes.string_at(buf, size.value).count(b"<heap nr=")
    stack = next(line.split()[0] for line in open("/proc/self/maps") if line.rstrip().endswith("[stack]"))
    lo, hi = (int(v, 16) for v in stack.split("-"))
    strings = ctypes.string_at(lo, hi - lo)
    at = strings.find(b"\0MALLOC_ARENA_MAX=")
    setting = strings[at + 1:strings.index(b"\0", at + 1)].decode() if at >= 0 else "unset"
    return count, setting
'''


def test_glibc_in_the_job_keeps_to_malloc_arena_max(warm_sim, tmp_path):
    body = "count, setting = arenas()\nraise RuntimeError(f'ARENAS {count} {setting}')\n"
    case, _raw = run(package(tmp_path / "op", body, prelude=ARENAS), warm_sim, tmp_path / "w")
    assert case.error is not None and "ARENAS" in case.error.message, (case.verdict, case.error)
    count, setting = case.error.message.split("ARENAS ")[1].split()[:2]
    assert setting == f"MALLOC_ARENA_MAX={MALLOC_ARENA_MAX}"
    assert int(count) <= int(MALLOC_ARENA_MAX), f"{count} malloc arenas in a job with eight threads"


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


# 600 threads alive at once: a model kernel's compile and graph verify ran 150-240 idle and over 512 under
# load (docs/SECURITY.md, "Processes"); the default limit must leave room for that.
MANY_THREADS = '''
import threading
gate = threading.Barrier(601)
workers = [threading.Thread(target=gate.wait) for _ in range(600)]
for t in workers:
    t.start()
gate.wait()
for t in workers:
    t.join()
''' + NORMAL


def test_six_hundred_threads_fit_the_default_process_limit(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", MANY_THREADS), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert raw["peak_processes"] is None or raw["peak_processes"] > 600, raw["peak_processes"]


def test_a_kernel_runs_within_the_default_limits(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", NORMAL), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    print(f"peak memory {raw['peak_memory_bytes'] / 2**20:.0f} MiB, peak processes {raw['peak_processes']}")
