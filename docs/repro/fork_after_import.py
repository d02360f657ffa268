"""docs/pypto.md §2: one SIM job per process, cheaply: fork a parent that imported torch and pypto.

Compares a fresh interpreter per job with a fork of a warm parent, and shows that each forked child can
point TILE_FWK_OUTPUT_DIR at its own folder after the fork (pypto reads it at every compile).
Usage: python docs/repro/fork_after_import.py [JOBS]   (default 4)
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import inputs, scale_add, scratch, silenced

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
root = scratch("fork")
ONE_JOB = ("import sys; sys.path.insert(0, sys.argv[1]); from common import inputs, scale_add, silenced; "
           "import torch, pypto; x, y = inputs(); k = scale_add()\nwith silenced(): k(x, y, torch.zeros_like(x))")

fresh = []
for _ in range(JOBS):
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", ONE_JOB, str(Path(__file__).parent)], check=True, cwd=root)
    fresh.append(time.perf_counter() - start)
print(f"fresh interpreter per job (import + one SIM call): {', '.join(f'{t:.2f}' for t in fresh)} s")

import pypto  # noqa: E402
import torch  # noqa: E402


def job(n: int) -> None:
    out = root / f"job{n}"
    out.mkdir()
    os.environ["TILE_FWK_OUTPUT_DIR"] = str(out)
    x, y = inputs()
    with silenced():
        scale_add()(x, y, torch.zeros_like(x))
    os._exit(0 if Path(pypto.pypto_impl.LogTopFolder()).parent == out else 3)


def wait(pid: int, limit_s: float = 30.0) -> str:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return str(os.waitstatus_to_exitcode(status))
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return f"hung, killed after {limit_s:.0f} s"


def forked_jobs(label: str, jobs: int = JOBS) -> None:
    took, codes = [], []
    for n in range(jobs):
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            job(n + (100 if "compiled" in label else 0))
        codes.append(wait(pid))
        took.append(time.perf_counter() - start)
    print(f"fork of a warm parent ({label}): {', '.join(f'{t:.2f}' for t in took)} s; "
          f"exit codes {codes} (0: the call ran and wrote into the child's own folder)")


forked_jobs("never compiled")
x, y = inputs()
with silenced():
    scale_add()(x, y, torch.zeros_like(x))  # now the parent has compiled once
forked_jobs("after one compile in the parent", jobs=1)
