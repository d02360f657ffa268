"""docs/pypto.md §2: a fork of a parent whose torch thread pool already ran with 2 threads hangs in torch.

Usage: python docs/repro/fork_threads.py   (runs the experiment with OMP_NUM_THREADS=2, then =1)
"""
import os
import signal
import subprocess
import sys
import time

from common import inputs, scale_add, scratch, silenced


def experiment() -> None:
    scratch("fork-threads")
    import torch

    a = torch.randn(1000, 1000)
    (a @ a).sum()  # the parent's thread pool has run
    pid = os.fork()
    if pid == 0:
        x, y = inputs((1024, 1024))
        x @ y
        with silenced():
            scale_add()(x, y, torch.zeros_like(x))
        os._exit(0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print(f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}: forked child finished, "
                  f"exit {os.waitstatus_to_exitcode(status)}")
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    print(f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}: forked child hung, killed after 60 s")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        experiment()
    else:
        for threads in ("2", "1"):
            subprocess.run([sys.executable, __file__, "child"], env={**os.environ, "OMP_NUM_THREADS": threads},
                           check=False)
