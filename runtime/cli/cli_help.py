"""How every `crosscheck` command renders --help: each option's default shown, one metavar style.

Metavars: a placeholder is an upper-case word (S, FILE, KEY=VALUE); a choice lists its literal
values (sim|npu).
"""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

_NO_DEFAULT = (None, False, [], "", argparse.SUPPRESS)


class HelpFormatter(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or not action.option_strings or action.default in _NO_DEFAULT:
            return text
        return text + " (default: %(default)s)"

    def _metavar_formatter(self, action: argparse.Action, default_metavar: str) -> Any:
        if action.metavar is None and action.choices is not None and not isinstance(action, argparse._SubParsersAction):
            choices = "|".join(str(c) for c in action.choices)
            return lambda size: (choices,) * size if isinstance(size, int) else choices
        return super()._metavar_formatter(action, default_metavar)


def walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parser and all its subcommands' parsers, depth first."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from walk(child)


def apply(parser: argparse.ArgumentParser) -> None:
    """Give the parser and every subcommand the shared formatter."""
    for p in walk(parser):
        p.formatter_class = HelpFormatter
