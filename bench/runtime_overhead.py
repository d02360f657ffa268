"""Cold script vs our warm-fork job, side by side in one run, per example (issue 2 target ≤ 0.3x).

    python bench/runtime_overhead.py [--repeat 3] [examples...]

Cold: `python bench/gym_test.py <example> --run_mode sim` in a fresh process, as users run it today.
Warm: runtime.runner.run_submission through an already started warm parent (graph verify off, the
same work: every case of the package), including syntax, lint, job dirs and the sandboxed fork.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runtime.runner import RunOptions, run_submission  # noqa: E402
from runtime.zygote import WarmParent  # noqa: E402

SMALL = ["scale_add", "relu", "gelu", "sigmoid", "softmax", "rmsnorm", "matmul", "attention", "dynamic_add"]


def cold(example: Path) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, str(REPO / "bench" / "gym_test.py"), str(example), "--run_mode", "sim"],
                       check=True, capture_output=True, cwd=out, env={"PATH": "/usr/local/bin:/usr/bin:/bin",
                                                                      "HOME": out, "TILE_FWK_OUTPUT_DIR": out + "/o"})
    return time.perf_counter() - start


def warm(example: Path, parent: WarmParent) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        report = run_submission(example, RunOptions(graph_verify=False, work_dir=Path(work)), warm=parent)
    assert all(c.verdict == "sim_output_unwritten" for c in report.cases), [c.verdict for c in report.cases]
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("examples", nargs="*", default=SMALL)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with WarmParent("sim") as parent:
        for name in args.examples:
            example = REPO / "examples" / name
            cases = len(__import__("json").loads((example / "test_cases.json").read_text())["test_cases"])
            c, w = [], []
            for _ in range(args.repeat):  # interleaved, so load drifts hit both sides alike
                c.append(cold(example))
                w.append(warm(example, parent))
            rows.append((name, cases, statistics.median(c), statistics.median(w)))
    print(f"{'example':<14}{'cases':>6}{'cold script s':>15}{'warm job s':>12}{'ratio':>8}")
    for name, cases, c, w in rows:
        print(f"{name:<14}{cases:>6}{c:>15.2f}{w:>12.2f}{w / c:>8.2f}")
    total_c = sum(r[2] for r in rows)
    total_w = sum(r[3] for r in rows)
    print(f"{'total':<14}{sum(r[1] for r in rows):>6}{total_c:>15.2f}{total_w:>12.2f}{total_w / total_c:>8.2f}")


if __name__ == "__main__":
    main()
