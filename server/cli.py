"""The `crosscheck` command: one entry point for the runtime, the service and the client.

Subcommands live in runtime/cli/cli.py (run, calculator), server/commands/<name>.py (the
service's) and client/<name>.py (the client's: submit, ci, upload); each of the last two has
`register(subparsers)` that adds its parser and sets `func` (a callable taking the parsed args and returning an exit code). They are
imported lazily so `crosscheck run` never loads the web or database stack.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from runtime.cli import cli_help

# (command, module): runtime commands first, then the service's and the client's (docs/architecture.md).
COMMANDS = (
    ("run", "runtime.cli.cli"),
    ("calculator", "runtime.cli.cli"),
    ("bisect", "client.bisect_server"),  # the runtime's bisect, plus --suite-run (docs/bisect.md §6)
    ("up", "server.commands.up"),
    ("api", "server.commands.api"),
    ("worker", "server.commands.worker"),
    ("submit", "client.submit"),
    ("ci", "client.ci"),
    ("upload", "client.upload"),
    ("db", "server.commands.db"),
    ("token", "server.commands.token"),
)


def _register_runtime(sub: argparse._SubParsersAction, name: str) -> None:  # type: ignore[type-arg]
    from runtime.cli import cli

    if name == "run":
        p = sub.add_parser("run", help="verify one submission on this host")
        cli.add_run_arguments(p)
        p.set_defaults(func=cli.run_command)
    else:
        p = sub.add_parser("calculator", help="build or check the graph-verify calculator")
        cli.add_calculator_arguments(p)
        p.set_defaults(func=cli.calculator_command)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    from runtime.cli import cli

    parser = argparse.ArgumentParser(prog="crosscheck", description="PTO Crosscheck: verify PyPTO kernels",
                                     epilog=cli.EXIT_CODES_HELP + " (run, submit and ci)")
    cli.add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = argv[0] if argv and not argv[0].startswith("-") else None
    for name, module in COMMANDS:
        if module == "runtime.cli.cli":
            _register_runtime(sub, name)
            continue
        if wanted is not None and wanted != name:
            sub.add_parser(name, help=f"(see crosscheck {name} --help)")  # listed, not loaded
            continue
        try:
            importlib.import_module(module).register(sub)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            sub.add_parser(name, help="(not available in this install)")
    cli_help.apply(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:  # the run daemon does the whole run when it can (docs/run-daemon.md)
        from runtime.cli.handoff import hand_off

        code = hand_off(argv[1:])
        if code is not None:
            return code
    args = build_parser(argv).parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        print(f"crosscheck {args.command}: not available in this install", file=sys.stderr)
        return 2
    return int(func(args))


if __name__ == "__main__":
    sys.exit(main())
