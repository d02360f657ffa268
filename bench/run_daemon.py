"""The edit loop: a repeated `crosscheck run` of one operator with the run daemon, against a plain cold
gym-style script and a cold `crosscheck run --no-daemon`, interleaved in one run (issue 23 target ≤ 0.3x).

    python bench/run_daemon.py [--repeat 5] [example]

Each round runs, in turn: `python bench/gym_test.py <example> --run_mode sim` (a fresh process, as
users run it today), `crosscheck run <example> --no-daemon` and `crosscheck run <example>` (the daemon,
started by a warm-up run before the first round). Graph verify is off in both crosscheck runs so the
work is the script's. Prints medians, ratios and the load average (docs/run-daemon.md).
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
CLI = [sys.executable, "-m", "server.cli", "run"]


def timed(argv: list[str], cwd: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("example", nargs="?", default="softmax")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    example = REPO / "examples" / args.example
    env = {k: v for k, v in os.environ.items() if k != "CROSSCHECK_NO_DAEMON"}
    env["PYTHONPATH"] = str(REPO)
    run = [*CLI, str(example), "--no-graph-verify"]
    with tempfile.TemporaryDirectory() as out:
        plain_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": out, "TILE_FWK_OUTPUT_DIR": out + "/o"}
        timed(run, out, env)  # warm-up: starts the daemon (or finds it)
        cold, no_daemon, daemon = [], [], []
        for _ in range(args.repeat):  # interleaved, so load drifts hit all sides alike
            cold.append(timed([sys.executable, str(REPO / "bench" / "gym_test.py"), str(example), "--run_mode", "sim"],
                              out, plain_env))
            no_daemon.append(timed([*run, "--no-daemon"], out, env))
            daemon.append(timed(run, out, env))
    c, n, d = (statistics.median(x) for x in (cold, no_daemon, daemon))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.example}: medians of {args.repeat}, load average {load} on {os.cpu_count()} cores")
    print(f"  plain cold script       {c:6.2f} s  1.00x")
    print(f"  crosscheck --no-daemon  {n:6.2f} s  {n / c:.2f}x")
    print(f"  crosscheck (daemon)     {d:6.2f} s  {d / c:.2f}x")
    print(f"run-daemon example={args.example} daemon/plain={d / c:.2f} no-daemon/plain={n / c:.2f} load={load}")


if __name__ == "__main__":
    main()
