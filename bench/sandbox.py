"""What the job sandbox costs and what real cases use of its limits (docs/SECURITY.md, Sandbox).

    python bench/sandbox.py [--repeat 3]

1. Each example's cases through an already started warm parent: wall time, and the peak real memory
   and process count the job cgroup recorded (what the defaults of 8 GiB and 512 must cover).
2. Cancel: seconds from WarmParent.cancel() to the run's return, for a case spinning in Python.
3. The leader's own work per job: making and removing a job cgroup, one RSS-watchdog poll of a
   process tree (used where no cgroup can be made), one disk poll of a 10,000-file job dir.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.fence.cgroup import JobCgroup
from runtime.runner import RunOptions, run_submission
from runtime.warm import WarmParent
from runtime.warm.guard import dir_bytes, tree_usage

EXAMPLES = ("relu", "softmax", "matmul", "attention", "dynamic_add")


class Recording:
    """The warm parent, keeping each leader report (peak memory and processes are in it)."""

    def __init__(self, warm: WarmParent):
        self.warm, self.raw = warm, []  # type: ignore[var-annotated]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.warm, name)

    def run_jobs(self, requests: list[dict[str, Any]], parallel: int) -> Iterator[tuple[int, dict[str, Any]]]:
        jobs = self.warm.run_jobs(requests, parallel)
        try:
            for index, report in jobs:
                self.raw.append(report)
                yield index, report
        finally:
            jobs.close()


def examples(warm: WarmParent) -> None:
    print("1. examples, one case at a time (peaks from the job cgroup)")
    print(f"{'example':<14}{'cases':>6}{'case s':>9}{'peak MiB':>10}{'peak procs':>12}")
    for name in EXAMPLES:
        rec = Recording(warm)
        with tempfile.TemporaryDirectory() as tmp:
            report = run_submission(REPO / "examples" / name, RunOptions(graph_verify=False, work_dir=Path(tmp)),
                                    warm=rec)  # type: ignore[arg-type]
        walls = [c.duration_s for c in report.cases]
        peak = max(r.get("peak_memory_bytes") or 0 for r in rec.raw) / 2**20
        procs = max(r.get("peak_processes") or 0 for r in rec.raw)
        print(f"{name:<14}{len(walls):>6}{statistics.median(walls):>9.2f}{peak:>10.0f}{procs:>12}")


def _cancel_when_spinning(warm: WarmParent, work: Path, sent: list[float]) -> None:
    while not any("SPINNING" in p.read_text() for p in work.glob("jobs/*/stdout.txt")):
        time.sleep(0.05)
    sent.append(time.monotonic())
    warm.cancel()


def cancel_latency(warm: WarmParent, repeat: int) -> None:
    times = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            pkg = Path(tmp) / "spin"
            pkg.mkdir()
            (pkg / "test_cases.json").write_text(json.dumps({"op_name": "spin", "test_cases": [
                {"id": "c", "seed": 1, "input": {"shape": [4, 4], "dtype": "float32"}}]}))
            (pkg / "spin_impl.py").write_text("def spin_wrapper(x):\n    print('SPINNING', flush=True)\n"
                                              "    while True:\n        pass\n")
            (pkg / "spin_golden.py").write_text("def spin_golden(x):\n    return x\n")
            work, sent = Path(tmp) / "w", []
            threading.Thread(target=_cancel_when_spinning, args=(warm, work, sent), daemon=True).start()
            report = run_submission(pkg, RunOptions(graph_verify=False, work_dir=work, timeout_s=300), warm=warm)
            times.append(time.monotonic() - sent[0])
            warm.cancelled = False
            assert report.cancelled and not report.cases
    print(f"2. cancel to return, median of {repeat}: {statistics.median(times):.2f} s (case timeout 300 s)")


def leader_work(repeat: int) -> None:
    made = []
    for i in range(repeat * 10):
        start = time.perf_counter()
        group, why = JobCgroup.create(f"job-{os.getpid()}-bench{i}", 2**30, 64)
        if group is None:
            print(f"3. no job cgroup here: {why}")
            break
        group.remove()
        made.append(time.perf_counter() - start)
    polls = []
    for _ in range(repeat * 10):
        start = time.perf_counter()
        tree_usage(1)
        polls.append(time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(100):
            folder = Path(tmp) / f"d{i}"
            folder.mkdir()
            for j in range(100):
                (folder / f"f{j}").write_bytes(b"x")
        disk = []
        for _ in range(repeat):
            start = time.perf_counter()
            dir_bytes(Path(tmp), 2**40)
            disk.append(time.perf_counter() - start)
    if made:
        print(f"3. job cgroup make + remove: {statistics.median(made) * 1000:.1f} ms (median of {len(made)})")
    print(f"   RSS watchdog poll of every process here ({len(os.listdir('/proc'))} /proc entries): "
          f"{statistics.median(polls) * 1000:.1f} ms, every 0.2 s only without a cgroup")
    print(f"   disk poll of a 10,000-file job dir: {statistics.median(disk) * 1000:.1f} ms, every 1 s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with WarmParent("sim") as warm:
        examples(warm)
        cancel_latency(warm, args.repeat)
    leader_work(args.repeat)


if __name__ == "__main__":
    main()
