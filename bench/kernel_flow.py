"""What following torch's data flow costs a wrapper (runtime/evidence/flow.py, bench/README.md).

Side by side in one process: the same post-processing bare and under the dispatch mode with its input
marked, medians of --repeat runs. Big tensors measure the per-byte cost (none expected: only storage
addresses are recorded); many small ops measure the per-op cost (Python per aten op).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from runtime.evidence.evidence import flow  # noqa: E402


def big(t: torch.Tensor) -> torch.Tensor:
    for _ in range(20):
        t = (t * 1.0001).clone().reshape(-1).reshape(t.shape).contiguous()
    return t


def small(t: torch.Tensor) -> torch.Tensor:
    for _ in range(2000):
        t = t + 1
    return t


def timed(fn, t: torch.Tensor, under_mode: bool) -> float:
    mode = flow.start()
    mode.mark(t)
    start = time.perf_counter()
    if under_mode:
        with mode:
            fn(t)
    else:
        fn(t)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    first = timed(lambda t: t + 1, torch.ones(1), True)  # the mode's first op in a fresh process
    print(f"first op under the mode: {first * 1000:.2f} ms")
    for name, fn, t in (("80 ops on 16 MiB", big, torch.randn(4096, 1024)), ("2000 ops on 8x8", small,
                                                                             torch.randn(8, 8))):
        bare, marked = [], []
        for _ in range(args.repeat):
            bare.append(timed(fn, t, False))
            marked.append(timed(fn, t, True))
        b, m = statistics.median(bare), statistics.median(marked)
        print(f"{name}: bare {b:.4f} s, under the mode {m:.4f} s, ratio {m / b:.2f}")


if __name__ == "__main__":
    main()
