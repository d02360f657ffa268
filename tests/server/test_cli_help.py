"""`crosscheck --help` everywhere: help text on every option, its default shown, one metavar style,
--version, real `calculator build|status` subcommands, one spelling of --log-level, and --timeout
meaning one thing (how long to wait)."""
from __future__ import annotations

import argparse
import re

import pytest

from runtime.cli import cli_help
from server.cli import COMMANDS, build_parser, main

PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(=[A-Z][A-Z0-9_]*)?$")
NAMES = sorted({name for name, _ in COMMANDS})


def parsers() -> list[argparse.ArgumentParser]:
    out = []
    for name in NAMES:
        out.extend(cli_help.walk(build_parser([name])))
    return out


def options() -> list[tuple[str, argparse.Action]]:
    skip = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    return [(p.prog, a) for p in parsers() for a in p._actions if not isinstance(a, skip)]


def test_every_option_and_argument_has_help() -> None:
    missing = [(prog, a.option_strings or a.dest) for prog, a in options() if not a.help]
    assert not missing


def test_one_metavar_style_placeholders_upper_case_choices_as_values() -> None:
    for prog, a in options():
        if not a.option_strings or a.nargs == 0:
            continue
        fmt = cli_help.HelpFormatter(prog)
        shown = fmt._format_args(a, a.dest.upper())
        if a.choices is not None and a.metavar is None:
            assert shown == "|".join(map(str, a.choices)), (prog, a.option_strings)
        else:
            assert PLACEHOLDER.match(shown), (prog, a.option_strings, shown)


def test_defaults_are_shown_in_the_help() -> None:
    for p in parsers():
        text = p.format_help().split("options:", 1)[1]
        for a in p._actions:
            if a.option_strings and a.default not in (None, False, [], "", argparse.SUPPRESS) and a.help:
                line = text[text.index(a.option_strings[0]):][:400]
                assert "default" in line, (p.prog, a.option_strings)


def test_log_level_has_one_spelling_and_timeout_one_meaning() -> None:
    for prog, a in options():
        assert "--loglevel" not in a.option_strings, prog
        if "--timeout" in a.option_strings:
            assert "--wait-timeout" in a.option_strings, prog  # only ever "how long to wait"
    run = next(a for prog, a in options() if prog == "crosscheck run" and "--case-timeout" in a.option_strings)
    assert run.default == 300.0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert re.match(r"^crosscheck \d+\.\d+\.\d+\+[0-9a-f]{12}$", capsys.readouterr().out.strip())


def test_calculator_build_and_status_are_subcommands(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    sub = next(a for a in build_parser(["calculator"])._subparsers._actions  # type: ignore[union-attr]
               if isinstance(a, argparse._SubParsersAction)).choices["calculator"]
    actions = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction))
    assert set(actions.choices) == {"build", "status"}
    code = main(["calculator", "status", "--cache-dir", str(tmp_path / "empty")])
    assert code == 3 and capsys.readouterr().out.startswith("not ready: ")


def test_exit_codes_are_in_the_help() -> None:
    for name in ("run", "submit"):
        p = next(p for p in cli_help.walk(build_parser([name])) if p.prog == f"crosscheck {name}")
        assert "0 acceptable, 1 kernel defect, 2 unusable input, 3 infrastructure" in p.format_help()
