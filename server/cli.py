"""The `crosscheck` command: one entry point for the runtime, the service and the client."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crosscheck", description="PTO Crosscheck: verify PyPTO kernels")
    sub = parser.add_subparsers(dest="command", required=True)
    from runtime.cli import add_calculator_arguments, add_run_arguments, calculator_command, run_command

    add_run_arguments(sub.add_parser("run", help="verify one submission on this host"))
    add_calculator_arguments(sub.add_parser("calculator", help="build or check the graph-verify calculator"))
    args = parser.parse_args(argv)
    if args.command == "run":
        return run_command(args)
    if args.command == "calculator":
        return calculator_command(args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
