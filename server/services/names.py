"""Text that becomes a name (operator, case, file, label): no NUL or other control characters.

PostgreSQL refuses NUL in text (a 500 once, while SQLite stored it), a file name cannot hold it, and
control characters (CR, LF) break the headers and logs a name is written into. Refused with a 422
naming the field; any other Unicode is kept.
"""
from __future__ import annotations

import unicodedata

from server.errors import InvalidInput


def has_control(value: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in value)


def check(what: str, value: str) -> str:
    """`value` when it holds no control character; InvalidInput naming `what` otherwise."""
    if has_control(value):
        raise InvalidInput(f"{what} {value[:80]!r} holds a control character (NUL, CR, LF, ...): use printable text")
    return value
