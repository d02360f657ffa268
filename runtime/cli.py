"""`crosscheck run` (and `python -m runtime`): verify one submission on this host."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from runtime.modes import MODES
from runtime import verdicts
from runtime.errors import HostError, SubmissionError

# 0: every case acceptable; 1: a kernel defect; 2: unusable input (or no NPU for --mode npu);
# 3: our infrastructure failed (the warm parent could not start or died).
EXIT_OK, EXIT_FAIL, EXIT_UNUSABLE, EXIT_INFRA = 0, 1, 2, 3


def default_cache_dir() -> Path:
    """Where the graph-verify calculator is cached (CROSSCHECK_CACHE_DIR overrides)."""
    env = os.environ.get("CROSSCHECK_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pto-crosscheck"


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive, finite number")
    return value


def _processes(text: str) -> int:
    if not text.isdigit() or not 8 <= int(text) <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a process count from 8 to 1000000")
    return int(text)


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path, help="operator package (folder, .zip, .tar.gz) or a .py script")
    p.add_argument("--mode", choices=list(MODES), default="sim")
    p.add_argument("--case", action="append", default=[], metavar="ID", help="run only this case (repeatable)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S", help="wall-clock limit per case")
    p.add_argument("--memory", type=_positive, default=8.0, metavar="GIB",
                   help="real memory per case, its process tree as a whole (a cgroup where possible)")
    p.add_argument("--processes", type=_processes, default=512, metavar="N", help="processes and threads per case")
    p.add_argument("--disk", type=_positive, default=4.0, metavar="GIB", help="disk per case, its whole job dir")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the JSON report here ('-' for stdout)")
    p.add_argument("--work-dir", type=Path, help="where job dirs go, kept (default: a temp dir, removed at exit)")
    p.add_argument("--keep", action="store_true", help="keep the temp work dir (job dirs, logs, evidence)")
    p.add_argument("--device", type=int, default=None, metavar="ID",
                   help="NPU card (NPU mode; default: TASK_DEVICE, else TILE_FWK_DEVICE_ID, else 0)")
    p.add_argument("--no-graph-verify", action="store_true", help="skip the CPU graph-verify oracle in SIM")
    p.add_argument("--verify-passes", action="store_true", help="also check every lowered pass (slow)")
    p.add_argument("--cache-dir", type=Path, default=None, help="graph-verify calculator cache")
    p.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4), metavar="N",
                   help="cases run at once, each in its own sandboxed fork (default: CPUs, at most 4)")


def add_calculator_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["build", "status"])
    p.add_argument("--cache-dir", type=Path, default=None)


def calculator_command(args: argparse.Namespace) -> int:
    from runtime import calculator

    cache = args.cache_dir or default_cache_dir()
    if args.action == "status":
        ready, note = calculator.status(cache)
        print(("ready: " if ready else "not ready: ") + note)
        return EXIT_OK if ready else EXIT_FAIL
    try:
        calculator.build(cache)
    except Exception as exc:  # noqa: BLE001 - a failed build is reported, not a traceback
        print(f"error: the calculator build failed: {exc}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def run_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from runtime.console import print_report
    from runtime.runner import RunOptions, run_submission
    from runtime.warm import WarmParentError

    err = Console(stderr=True)
    options = RunOptions(mode=args.mode, cases=args.case, timeout_s=args.timeout,
                         memory_bytes=int(args.memory * 2**30), nproc=args.processes,
                         disk_bytes=int(args.disk * 2**30), work_dir=args.work_dir, device_id=args.device,
                         graph_verify=not args.no_graph_verify, verify_passes=args.verify_passes,
                         cache_dir=args.cache_dir or default_cache_dir(), parallel=max(1, args.jobs),
                         keep_work=args.keep)
    # SIGTERM as an exception, so the work dir and the warm parent are cleaned up on that way out too.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        def progress(case, done, total):  # type: ignore[no-untyped-def]
            err.print(f"[{done}/{total}] {case.case}: {case.verdict} ({case.duration_s:.2f} s)")

        report = run_submission(args.path, options, on_case=progress)
    except (SubmissionError, HostError) as exc:
        err.print(f"[bold red]error:[/] {exc}", soft_wrap=True)  # one line, whatever the width
        return EXIT_UNUSABLE
    except WarmParentError as exc:
        err.print(f"[bold red]error:[/] infrastructure: {exc}")
        return EXIT_INFRA
    to_stdout = args.json is not None and str(args.json) == "-"
    print_report(report, err if to_stdout else Console())
    if args.json is not None:
        text = report.to_json()
        if to_stdout:
            sys.stdout.write(text + "\n")
        else:
            args.json.write_text(text)
    ok = all(verdicts.acceptable(c.verdict, report.mode) for c in report.cases) and report.cases
    return EXIT_OK if ok else EXIT_FAIL


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_arguments(sub.add_parser("run", help="verify one submission on this host"))
    add_calculator_arguments(sub.add_parser("calculator", help="build or check the graph-verify calculator"))
    args = parser.parse_args(argv)
    return calculator_command(args) if args.command == "calculator" else run_command(args)


if __name__ == "__main__":
    sys.exit(main())
