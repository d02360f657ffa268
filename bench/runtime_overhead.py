"""Cold script vs our warm-fork job, side by side in one run, per example (issue 2 target ≤ 0.3x).

    python bench/runtime_overhead.py [--repeat 3] [examples...]

Cold: `python bench/gym_test.py <example> --run_mode sim` in a fresh process, as users run it today.
Warm: runtime.runner.run_submission through an already started warm parent (graph verify off, the
same work: every case of the package), including syntax, lint, job dirs and the sandboxed fork.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.warm import WarmParent  # noqa: E402

SMALL = ["scale_add", "relu", "gelu", "sigmoid", "softmax", "rmsnorm", "matmul", "attention", "dynamic_add"]


def cold(example: Path) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, str(REPO / "bench" / "gym_test.py"), str(example), "--run_mode", "sim"],
                       check=True, capture_output=True, cwd=out, env={"PATH": "/usr/local/bin:/usr/bin:/bin",
                                                                      "HOME": out, "TILE_FWK_OUTPUT_DIR": out + "/o"})
    return time.perf_counter() - start


def warm(example: Path, parent: WarmParent, parallel: int) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        options = RunOptions(graph_verify=False, work_dir=Path(work), parallel=parallel)
        report = run_submission(example, options, warm=parent)
    assert all(c.verdict == "sim_output_unwritten" for c in report.cases), [c.verdict for c in report.cases]
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("examples", nargs="*", default=SMALL)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4), help="cases at once (parallel column)")
    args = ap.parse_args()
    rows = []
    with WarmParent("sim") as parent:
        for name in args.examples:
            example = REPO / "examples" / name
            cases = len(__import__("json").loads((example / "test_cases.json").read_text())["test_cases"])
            c, w1, wn = [], [], []
            for _ in range(args.repeat):  # interleaved, so load drifts hit all sides alike
                c.append(cold(example))
                w1.append(warm(example, parent, 1))
                wn.append(warm(example, parent, args.jobs))
            rows.append((name, cases, statistics.median(c), statistics.median(w1), statistics.median(wn)))
    print(f"cold: a fresh `python gym_test.py --run_mode sim`; warm: our job through a started warm parent, "
          f"cases one at a time, and {args.jobs} at a time (crosscheck run's default on this host)")
    print(f"{'example':<14}{'cases':>6}{'cold s':>9}{'warm s':>9}{'ratio':>7}{f'warm x{args.jobs} s':>13}{'ratio':>7}")
    for name, cases, c, w1, wn in rows:
        print(f"{name:<14}{cases:>6}{c:>9.2f}{w1:>9.2f}{w1 / c:>7.2f}{wn:>13.2f}{wn / c:>7.2f}")
    tc, t1, tn = (sum(r[i] for r in rows) for i in (2, 3, 4))
    print(f"{'total':<14}{sum(r[1] for r in rows):>6}{tc:>9.2f}{t1:>9.2f}{t1 / tc:>7.2f}{tn:>13.2f}{tn / tc:>7.2f}")


if __name__ == "__main__":
    main()
