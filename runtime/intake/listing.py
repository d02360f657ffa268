"""Case ids from a script's `--list` output, exactly as the script will take them back (docs/realops.md §4).

Listings seen in pypto 0.2.0's examples and the gym: `  ID: x` (also behind logging's `LEVEL:logger:` prefix),
`  grp::case. Name`, `  grp::case: Name`, a bare `  grp::case` line, `  grp::case  — description`, with an
optional bullet or number in front. The id is the `ID:` value or the `group::case` word; punctuation that ends
the word (the `.` or `:` before a description) is the listing's, not the id's.
"""
from __future__ import annotations

import re

_PREFIX = r"^(?:[A-Z]+:[\w.]*:)?[ \t]*(?:[-*\u2022][ \t]+|\d+[.)][ \t]+|\[\d+\][ \t]+)?"
_END = r"[.:,;]?"  # the listing's punctuation after the id
# `ID: x`: the value, without a trailing period or colon.
CASE_ID = re.compile(_PREFIX + r"ID:[ \t]*(\S*[^\s.:,;])" + _END + r"[ \t]*$", re.MULTILINE)
# A line that starts with one `group::case` id, alone or before its description.
NODE_ID = re.compile(_PREFIX + r"([\w.-]+::[\w.\[\]-]*[\w\]])" + _END + r"(?:[ \t].*)?$", re.MULTILINE)


def case_ids(text: str) -> list[str]:
    """The ids a listing names, in order, each once; [] when it names none in a form we read."""
    ids = CASE_ID.findall(text) or NODE_ID.findall(text)
    return list(dict.fromkeys(ids))


def listed(case_id: str, text: str) -> bool:
    """The id appears in the listing as a word of its own (a trailing `.` or `:` ends the word)."""
    return re.search(rf"(?<![\w.:-]){re.escape(case_id)}(?![\w-]|[.:][\w:])", text) is not None
