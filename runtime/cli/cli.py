"""`crosscheck run` (and `python -m runtime`): verify one submission on this host.

Exit codes (runtime/exit_codes.py): 0 acceptable, 1 kernel defect, 2 unusable input,
3 infrastructure or no capable host (e.g. --mode npu without an NPU).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

from runtime.cli import cli_help
from runtime import exit_codes, vocabulary
from runtime.evidence.calculator import default_cache_dir
from runtime.errors import HostError, SubmissionError
from runtime.fence.sandbox import DEFAULT_PROCESSES
from runtime.modes import MODES
from runtime.devices.pypto_api import version_argument

EXIT_CODES_HELP = ("exit codes: 0 acceptable, 1 kernel defect, 2 unusable input, "
                   "3 infrastructure or no capable host/worker")


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
    p.epilog = EXIT_CODES_HELP
    p.add_argument("path", type=Path,
                   help="operator package (folder, .zip, .tar.gz), a .py test file, or a checkout (with --op/--list)")
    p.add_argument("--op", action="append", default=[], metavar="NAME",
                   help="in a checkout: run this operator (repeatable; names match ignoring case and '_')")
    p.add_argument("--list", action="store_true",
                   help="in a checkout: list the operators found and their route; for a test file, its test "
                        "functions and skip marks")
    p.add_argument("--task", type=Path, metavar="TASK",
                   help="a KernelBench task file (level1/19_ReLU.py): PATH is the operator dir written for it "
                        "(default: the task_desc.py beside it)")
    p.add_argument("--format", choices=("text", "gym"), default="text",
                   help="gym: also write the gym verifier's verify_run.json, cheat_check_script.json and "
                        "skill_report.json (KernelBench operators; see --gym-dir)")
    p.add_argument("--gym-dir", type=Path, default=Path("."), metavar="DIR", help="where --format gym writes")
    add_case_arguments(p)
    p.add_argument("--json", type=Path, metavar="FILE", help="write the JSON report here ('-' for stdout)")
    p.add_argument("--work-dir", type=Path, metavar="DIR",
                   help="where job dirs go, kept (default: a temp dir, removed at exit)")
    p.add_argument("--keep", action="store_true", help="keep the temp work dir (job dirs, logs, evidence)")


def add_case_arguments(p: argparse.ArgumentParser) -> None:
    """How each case runs: mode, which cases, limits, graph verify (shared by run and bisect)."""
    p.add_argument("--mode", choices=list(MODES), default="sim", help="where the kernel runs")
    p.add_argument("--case", action="append", default=[], metavar="ID", help="run only this case (repeatable)")
    p.add_argument("--case-timeout", type=_positive, default=300.0, metavar="S", help="wall-clock limit per case")
    p.add_argument("--memory", type=_positive, default=None, metavar="GIB",
                   help="real memory per case, its process tree as a whole (a cgroup where possible); "
                        "default: half of this host's memory")
    p.add_argument("--processes", type=_processes, default=DEFAULT_PROCESSES, metavar="N", help="processes and threads per case")
    p.add_argument("--disk", type=_positive, default=4.0, metavar="GIB", help="disk per case, its whole job dir")
    p.add_argument("--device", type=int, default=None, metavar="ID",
                   help="NPU card (NPU mode; default: TASK_DEVICE, else TILE_FWK_DEVICE_ID, else 0)")
    p.add_argument("--no-daemon", action="store_true",
                   help="start a private warm parent instead of the run daemon kept between runs "
                        "(docs/run-daemon.md)")
    p.add_argument("--no-graph-verify", action="store_true", help="skip the CPU graph-verify oracle in SIM")
    p.add_argument("--verify-passes", action="store_true", help="also check every lowered pass (slow)")
    p.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="graph-verify calculator cache (default: $CROSSCHECK_CACHE_DIR, else ~/.cache/pto-crosscheck)")
    p.add_argument("--pypto", type=version_argument, default=None, metavar="VERSION",
                   help="the pypto version the kernel was written for; refused unless this host has it")
    p.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4), metavar="N",
                   help="cases run at once, each in its own sandboxed fork (default: CPUs, at most 4)")


def add_calculator_arguments(p: argparse.ArgumentParser) -> None:
    """`calculator build` and `calculator status`, each a real subcommand."""
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (("build", "build the graph-verify calculator into the cache"),
                       ("status", "say whether the cached calculator is ready (exit 0) or not (exit 3)")):
        a = actions.add_parser(name, help=text, description=text)
        a.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                       help="calculator cache (default: $CROSSCHECK_CACHE_DIR, else ~/.cache/pto-crosscheck)")


def calculator_command(args: argparse.Namespace) -> int:
    from runtime.evidence import calculator

    cache = args.cache_dir or default_cache_dir()
    if args.action == "status":
        ready, note = calculator.status(cache)
        print(("ready: " if ready else "not ready: ") + note)
        return exit_codes.OK if ready else exit_codes.INFRA
    try:
        calculator.build(cache)
    except Exception as exc:  # noqa: BLE001 - a failed build is reported, not a traceback
        print(f"error: the calculator build failed: {exc}", file=sys.stderr)
        return exit_codes.INFRA
    return exit_codes.OK


def run_options(args: argparse.Namespace) -> Any:
    """The runner's options from the arguments of add_case_arguments (and run's --work-dir, --keep)."""
    from runtime.runner import RunOptions

    work_dir = getattr(args, "work_dir", None)
    return RunOptions(mode=args.mode, cases=args.case, timeout_s=args.case_timeout,
                      memory_bytes=_memory_bytes(args), memory_from=_memory_from(args), nproc=args.processes,
                      disk_bytes=int(args.disk * 2**30),
                      work_dir=work_dir.resolve() if work_dir else None,  # the jobs run in other dirs
                      device_id=args.device, graph_verify=not args.no_graph_verify,
                      verify_passes=args.verify_passes, cache_dir=args.cache_dir or default_cache_dir(),
                      parallel=max(1, args.jobs), pypto=args.pypto, keep_work=getattr(args, "keep", False))


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def run_command(args: argparse.Namespace, loaded: Any = None, reports: list[Any] | None = None,
                warm: Any = None) -> int:
    """Run one submission: `args.path`, or `loaded` (an operator of a checkout, runtime.cli.cli_checkout).

    With `reports`, the report is appended there instead of written to --json. `warm`: the warm parent
    to use (a run handed to the run daemon, runtime/cli/run_daemon.py); else the daemon's or a private one.
    """
    if loaded is None and (getattr(args, "list", False) or getattr(args, "op", None)):
        from runtime.cli.cli_checkout import checkout_command

        return checkout_command(args, run_command)
    if loaded is None:
        from runtime.cli.cli_checkout import checkout_command, operators_of_test_folder
        from runtime.intake.submission import load_operator

        try:
            loaded = _task_operator(args)
        except SubmissionError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exit_codes.UNUSABLE
        in_checkout = None if loaded is not None else operators_of_test_folder(args.path)
        if in_checkout is not None and len(in_checkout[1]) > 1:  # a model folder's tests: each an operator
            args.path, args.op = str(in_checkout[0]), [op.name for op in in_checkout[1]]
            return checkout_command(args, run_command)
        if in_checkout is not None:  # a gym test folder: its kernel is under the checkout's src/
            try:
                loaded = load_operator(in_checkout[0], in_checkout[1][0])
            except SubmissionError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return exit_codes.UNUSABLE
    from rich.console import Console

    err = Console(stderr=True)
    options = run_options(args)
    # SIGTERM as an exception, so the work dir and the warm parent are cleaned up on that way out too;
    # the caller's own handler is back once the run is over.
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return _run_and_print(args, options, loaded, reports, err, warm)
    finally:
        if previous is not None:  # None: a handler not set from Python, nothing to restore
            signal.signal(signal.SIGTERM, previous)


def _task_operator(args: argparse.Namespace) -> Any:
    """A KernelBench operator (--task, or a dir with its task_desc.py), else None; --format gym needs one."""
    from runtime.intake import kernelbench
    from runtime.intake.submission import load_task

    if getattr(args, "task", None) or kernelbench.is_operator_dir(Path(args.path)):
        return load_task(args.path, args.task)
    if getattr(args, "format", "text") == "gym":
        raise SubmissionError(f"{args.path}: --format gym needs a KernelBench operator: give --task TASK.py")
    return None


def _run_and_print(args: argparse.Namespace, options: Any, loaded: Any, reports: list[Any] | None,
                   err: Any, warm: Any = None) -> int:
    from rich.console import Console

    from runtime.cli.console import print_report
    from runtime.runner import run_submission
    from runtime.warm import WarmParentError

    try:
        def progress(case, done, total):  # type: ignore[no-untyped-def]
            # A pytest item's id holds brackets (`test_x[a-1]`): text, not rich markup.
            err.print(f"[{done}/{total}] {case.case}: {case.verdict} ({case.duration_s:.2f} s)", markup=False)

        _build_calculator_once(options, err)
        warm = warm or _daemon(args, options)
        try:
            report = run_submission(args.path, options, warm=warm, on_case=progress, loaded=loaded)
        finally:
            if warm is not None:
                warm.close()  # ends this run's session; the daemon waits for the next run
    except SubmissionError as exc:
        err.print(f"[bold red]error:[/] {exc}", soft_wrap=True)  # one line, whatever the width
        return exit_codes.UNUSABLE
    except HostError as exc:
        err.print(f"[bold red]error:[/] {exc}", soft_wrap=True)  # "no NPU on this host: ...": exit 3
        return exit_codes.INFRA
    except WarmParentError as exc:
        err.print(f"[bold red]error:[/] infrastructure: {exc}")
        return exit_codes.INFRA
    to_stdout = args.json is not None and str(args.json) == "-"
    print_report(report, err if to_stdout else Console())
    if reports is not None:
        reports.append(report)
    elif args.json is not None:
        text = report.to_json()
        if to_stdout:
            sys.stdout.write(text + "\n")
        else:
            args.json.write_text(text)
    if getattr(args, "format", "text") == "gym" and loaded is not None and loaded.task and report.cases:
        from runtime.cli import gym_report

        for path in gym_report.write(report, loaded.root, loaded.files, loaded.task, args.gym_dir):
            err.print(f"gym: {path}", soft_wrap=True)
    code = exit_codes.of_cases(report.cases, report.mode)
    err.print(("[bold green]" if code == exit_codes.OK else "[bold red]") + "result:[/] "
              + vocabulary.summary(report.cases, report.mode) + f" (exit {code}: {exit_codes.WORDS[code]})",
              soft_wrap=True)
    return code


def _build_calculator_once(options: Any, err: Any) -> None:
    """A SIM run with graph verify on a host whose calculator is not built yet: build it now, once per host
    (about a minute), rather than give every case of this run no graph evidence (docs/pypto.md §3)."""
    import subprocess
    from importlib import metadata

    from rich.markup import escape

    from runtime.evidence import calculator
    from runtime.evidence.graph_verify import version_problem

    if options.mode != "sim" or not options.graph_verify or calculator.cached_for_installed(options.cache_dir):
        return
    if version_problem(metadata.version("pypto")):
        return  # graph verify does not run on this pypto: the cases say so (docs/versions.md §2)
    err.print(f"building pypto's graph-verify calculator once for this host (about a minute, cached in "
              f"{options.cache_dir}; --no-graph-verify skips it)", soft_wrap=True)
    done = subprocess.run([sys.executable, "-m", "runtime", "calculator", "build", "--cache-dir",
                           str(options.cache_dir)], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        why = tail[0].removeprefix("error: ").removeprefix("the calculator build failed: ")
        err.print(f"[bold yellow]warning:[/] the calculator build failed, so graph verify is unavailable in "
                  f"this run: {escape(why)}", soft_wrap=True)


def _memory_bytes(args: argparse.Namespace) -> int:
    from runtime.fence.host_memory import default_memory_bytes

    return int(args.memory * 2**30) if args.memory is not None else default_memory_bytes()


def _memory_from(args: argparse.Namespace) -> str:
    from runtime.fence.host_memory import describe

    return "--memory" if args.memory is not None else describe()


def _daemon(args: argparse.Namespace, options: Any) -> Any:
    """The run daemon's warm parent, or None for a private one (--no-daemon, CROSSCHECK_NO_DAEMON)."""
    from runtime.warm.daemon_client import NO_DAEMON_ENV, DaemonParent

    if getattr(args, "no_daemon", False) or os.environ.get(NO_DAEMON_ENV):
        return None
    return DaemonParent(options.mode, options.cache_dir)


def add_version(parser: argparse.ArgumentParser) -> None:
    from runtime.version import runtime_version

    parser.add_argument("--version", action="version", version=f"%(prog)s {runtime_version()}",
                        help="print the version (release+digest of the runtime's source) and exit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_run_arguments(sub.add_parser("run", help="verify one submission on this host"))
    add_calculator_arguments(sub.add_parser("calculator", help="build or check the graph-verify calculator"))
    cli_help.apply(parser)
    args = parser.parse_args(argv)
    return calculator_command(args) if args.command == "calculator" else run_command(args)


if __name__ == "__main__":
    sys.exit(main())
