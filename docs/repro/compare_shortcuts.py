"""docs/harness-cost.md §2: the facts behind the compare's shortcuts, and what each pass over a tensor costs.

Usage: python docs/repro/compare_shortcuts.py [MIB]   (default 32: one float32 tensor of that size)
Prints, for torch as installed:
- torch.equal is False when a NaN is present, so a bit-identical pair has no NaN;
- float16, bfloat16 and float32 values (NaN, inf, extremes, -0.0 included) convert to float64 exactly, so
  NaN/inf counts and the largest finite |x| taken in the tensor's own dtype equal the float64 ones;
- the mean of a masked copy with every element kept equals the mean of the tensor itself, bit for bit;
- seconds of each pass the old compare made over one tensor, as a share of one float64 conversion.
"""
import os
import statistics
import sys
import time

import torch


def timed(fn, repeat: int = 5) -> float:
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    x = torch.tensor([1.0, float("nan")])
    print(f"torch {torch.__version__}: torch.equal(x, x.clone()) with a NaN in x: {torch.equal(x, x.clone())}")

    special = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-40, 3.4e38, -65504.0, 1.5])
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        t = torch.cat([special.to(dtype), torch.randn(1 << 16).to(dtype)])
        t64 = t.to(torch.float64)
        same_bits = torch.equal(t64.to(dtype).view(torch.int16 if dtype != torch.float32 else torch.int32),
                                t.view(torch.int16 if dtype != torch.float32 else torch.int32))
        finite, finite64 = t[torch.isfinite(t)], t64[torch.isfinite(t64)]
        same = (int(torch.isnan(t).sum()) == int(torch.isnan(t64).sum())
                and int(torch.isinf(t).sum()) == int(torch.isinf(t64).sum())
                and float(finite.abs().max()) == float(finite64.abs().max()))
        print(f"{dtype}: float64 and back keeps every bit: {same_bits}; counts and max |x| the same: {same}")

    d = torch.rand(mib * 1024 * 1024 // 8, dtype=torch.float64)
    kept = d[torch.ones_like(d, dtype=torch.bool)]
    print(f"mean of a float64 tensor and of its all-kept masked copy, bit for bit: "
          f"{float(d.mean()).hex() == float(kept.mean()).hex()} ({float(d.mean()).hex()})")

    o = torch.randn(mib * 1024 * 1024 // 4)
    o64 = o.to(torch.float64)
    mask = torch.isfinite(o64)
    base = timed(lambda: o.to(torch.float64))
    passes = {
        "to(float64)": base,
        "isfinite (float64)": timed(lambda: torch.isfinite(o64)),
        "isfinite (float32)": timed(lambda: torch.isfinite(o)),
        "masked copy x[finite] (float64)": timed(lambda: o64[mask]),
        "abs().max() (float64)": timed(lambda: o64.abs().max()),
        "abs().max() (float32)": timed(lambda: o.abs().max()),
        "torch.equal (float32, equal)": timed(lambda: torch.equal(o, o.clone())) - timed(lambda: o.clone()),
    }
    print(f"\nOne {mib} MiB float32 tensor, median of 5; torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f}:")
    for name, seconds in passes.items():
        print(f"  {name:34s} {seconds:7.3f} s  {seconds / base:5.2f}x to(float64)")


if __name__ == "__main__":
    main()
