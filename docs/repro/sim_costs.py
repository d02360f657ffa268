"""docs/pypto.md §2: what a SIM call costs (import, compile, call, memory) and that its numbers are stable.

Usage: python docs/repro/sim_costs.py [CALLS]   (default 12 calls of x * 2 + y on 64 x 128 fp32)
"""
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from common import inputs, scale_add, scratch, silenced

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
root = scratch("sim-costs")

# Import cost, in fresh interpreters.
probe = ("import time; t = time.perf_counter(); import torch; t1 = time.perf_counter(); import pypto; "
         "t2 = time.perf_counter(); print(f'{t1 - t:.2f} {t2 - t1:.2f}')")
for _ in range(3):
    torch_s, pypto_s = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                      cwd=root).stdout.split()
    print(f"fresh interpreter: import torch {torch_s} s, then import pypto {pypto_s} s")

import pypto  # noqa: E402
import torch  # noqa: E402
from pypto.frontend.parser.entry import JitCallableWrapper  # noqa: E402

compile_s: list[float] = []
stock_compile = JitCallableWrapper.compile


def timed_compile(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    try:
        return stock_compile(self, *args, **kwargs)
    finally:
        compile_s.append(time.perf_counter() - start)


JitCallableWrapper.compile = timed_compile


def rss_mb() -> float:
    return float(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def end_to_end_cycles() -> tuple[int, int]:
    cores = json.loads((Path(pypto.pypto_impl.LogTopFolder()) / "CostModelSimulationOutput"
                        / "_simulate.swim.json").read_text())
    tasks = [t for c in cores if c["coreType"] in ("AIC", "AIV") for t in c["tasks"]]
    return min(t["execStart"] for t in tasks), max(t["execEnd"] for t in tasks)


kernel = scale_add()
call_s, rss, cycles = [], [], set()
for i in range(CALLS):
    x, y = inputs((64, 128), seed=i)  # new data every call
    start = time.perf_counter()
    with silenced():
        kernel(x, y, torch.zeros_like(x))
    call_s.append(time.perf_counter() - start)
    rss.append(rss_mb())
    cycles.add(end_to_end_cycles())

print(f"calls: {CALLS}; compiles: {len(compile_s)} (one per call)")
print(f"call time: first {call_s[0]:.2f} s, later median {sorted(call_s[1:])[len(call_s[1:]) // 2]:.2f} s")
print(f"compile time per call: median {sorted(compile_s)[len(compile_s) // 2]:.2f} s")
growth = (rss[-1] - rss[2]) / (len(rss) - 3)
print(f"resident memory: {rss[0]:.0f} MB after call 1, {rss[-1]:.0f} MB after call {CALLS}: "
      f"{growth:.1f} MB per call from call 3 on")
print(f"cost model (first, last task cycle) over {CALLS} calls with different data: {sorted(cycles)}")
