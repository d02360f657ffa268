"""docs/pypto.md §3: the graph-verify calculator: stock build cost, cmake choice, and loading a built copy.

Usage: python docs/repro/calculator.py [--skip-build]
The build step runs pypto's own BuildOnlineManager.build_and_load_calculator() in a child process and
samples the resident memory of the whole process tree (cmake, make, g++) every 0.2 s.
"""
import os
import resource
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import scratch

BUILD = ("import time, pypto; from pypto._utils import BuildOnlineManager as M; t = time.perf_counter(); "
         "M().build_and_load_calculator(); print(f'{time.perf_counter() - t:.1f}')")
PAGE_MB = resource.getpagesize() / 2**20


def tree_rss_mb(root_pid: int) -> tuple[float, float]:
    """Resident memory of a process and all its descendants: (sum, largest single process)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * PAGE_MB
        except (OSError, IndexError, ValueError):
            continue
    total, largest, todo = 0.0, 0.0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0.0)
        largest = max(largest, rss.get(pid, 0.0))
        todo.extend(children.get(pid, []))
    return total, largest


def stock_build() -> None:
    proc = subprocess.Popen([sys.executable, "-c", BUILD], stdout=subprocess.PIPE, text=True)
    peak, largest = 0.0, 0.0
    while proc.poll() is None:
        total, single = tree_rss_mb(proc.pid)
        peak, largest = max(peak, total), max(largest, single)
        time.sleep(0.2)
    print(f"stock build_and_load_calculator(): {proc.stdout.read().strip()} s on {os.cpu_count()} CPUs, exit "
          f"{proc.returncode}; peak resident memory: process tree {peak / 1024:.2f} GiB (shared pages counted "
          f"per process), largest single process {largest / 1024:.2f} GiB")


def cmake_choice() -> None:
    """pypto looks for an ELF cmake on PATH and skips anything else (a pip `cmake` is a Python script)."""
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp, "cmake")
        fake.write_text("#!/bin/sh\nexec /usr/bin/cmake \"$@\"\n")
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
        code = "from pypto._utils import BuildOnlineManager as M; print(M._CMakeContext._which_cmake())"
        for path in (tmp, f"{tmp}:{os.environ['PATH']}"):
            found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   env={**os.environ, "PATH": path}).stdout.strip()
            print(f"PATH starts with a script named cmake ({'alone' if path == tmp else 'then the system'}): "
                  f"pypto picks {found}")


def load_and_flag() -> None:
    load = ("import time, pypto; from common import load_calculator; t = time.perf_counter(); "
            "print(load_calculator(), f'in {time.perf_counter() - t:.4f} s')")
    print(subprocess.run([sys.executable, "-c", load], capture_output=True, text=True,
                         cwd=Path(__file__).parent).stdout.strip())
    # The flag alone: pypto then believes the calculator is there and calls into a library never loaded.
    flag_only = (
        "import sys; sys.path.insert(0, '.'); from common import scratch, scale_add, inputs; scratch('flag'); "
        "import torch, pypto; from pypto._utils import BuildOnlineManager; "
        "BuildOnlineManager().calculator_loaded = True; "
        "k = scale_add(verify_options={'enable_pass_verify': True, 'pass_verify_pass_filter': []}); x, y = inputs(); "
        "pypto.set_verify_golden_data(goldens=[None, None, x * 2 + y]); k(x, y, torch.zeros_like(x)); print('returned')")
    proc = subprocess.run([sys.executable, "-c", flag_only], capture_output=True, text=True, cwd=Path(__file__).parent)
    end = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    print(f"flag set without loading the library, then a verified call: {end}")


if __name__ == "__main__":
    scratch("calculator")
    cmake_choice()
    load_and_flag()
    if "--skip-build" not in sys.argv:
        stock_build()
