"""The edit loop: a repeated `crosscheck run` of one operator with the run daemon, against a plain cold
gym-style script and a cold `crosscheck run --no-daemon`, interleaved in one run (issue 23 target ≤ 0.3x).

    python bench/run_daemon.py [--repeat 5] [--before CHECKOUT] [example]

Each round runs, in turn: `python bench/gym_test.py <example> --run_mode sim` (a fresh process, as
users run it today), `crosscheck run <example> --no-daemon` and `crosscheck run <example>` (the daemon,
started by a warm-up run before the first round). Graph verify is off in both crosscheck runs so the
work is the script's. With --before, a checkout of earlier code (e.g. `git archive REV | tar -x -C DIR`)
runs its own daemon in the same rounds. Every daemon gets a cache dir of its own, so other sessions'
daemons on the host are left alone. Prints medians, ratios and the load average (docs/run-daemon.md).
"""
from __future__ import annotations

import argparse
import os
import socket
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
    ap.add_argument("--before", type=Path, help="a checkout of earlier code: its daemon run, timed alongside")
    args = ap.parse_args()
    example = REPO / "examples" / args.example
    base = {k: v for k, v in os.environ.items() if k != "CROSSCHECK_NO_DAEMON"}
    with tempfile.TemporaryDirectory() as out:
        plain_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": out, "TILE_FWK_OUTPUT_DIR": out + "/o"}
        sides = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
        runs = {name: ([*CLI, str(example), "--no-graph-verify", "--cache-dir", f"{out}/cache-{name}"],
                       {**base, "PYTHONPATH": str(root)}) for name, root in sides.items()}
        for argv, env in runs.values():
            timed(argv, out, env)  # warm-up: starts this side's daemon
        cold, no_daemon = [], []
        daemon: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):  # interleaved, so load drifts hit all sides alike
            cold.append(timed([sys.executable, str(REPO / "bench" / "gym_test.py"), str(example), "--run_mode", "sim"],
                              out, plain_env))
            argv, env = runs["after"]
            no_daemon.append(timed([*argv, "--no-daemon"], out, env))
            for name, (argv, env) in runs.items():
                daemon[name].append(timed(argv, out, env))
        for argv, env in runs.values():
            stop_daemon(Path(argv[-1]))
    c, n = statistics.median(cold), statistics.median(no_daemon)
    d = {name: statistics.median(times) for name, times in daemon.items()}
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.example}: medians of {args.repeat}, load average {load} on {os.cpu_count()} cores")
    print(f"  plain cold script         {c:6.2f} s  1.00x")
    print(f"  crosscheck --no-daemon    {n:6.2f} s  {n / c:.2f}x")
    for name, value in d.items():
        label = "crosscheck (daemon)" if len(d) == 1 else f"crosscheck (daemon, {name})"
        print(f"  {label:26s}{value:6.2f} s  {value / c:.2f}x")
    print(f"run-daemon example={args.example} daemon/plain={d['after'] / c:.2f} no-daemon/plain={n / c:.2f}"
          + (f" before/plain={d['before'] / c:.2f}" if "before" in d else "") + f" load={load}")


def stop_daemon(cache: Path) -> None:
    """Ask the daemon of this cache dir to exit (it would otherwise wait out its idle timeout)."""
    for sock in cache.glob("run-daemon-*/*.sock"):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(sock))
                s.makefile("rb").readline()
                s.sendall(b'{"op": "shutdown"}\n')
        except OSError:
            pass

if __name__ == "__main__":
    main()
