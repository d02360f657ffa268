"""Python source read as an AST, one parse at a time per process (docs/platform.md §6).

CPython 3.11 keeps the AST builder's recursion count in one place per interpreter. Two threads building
trees at once (API request threads reading uploads, say) can corrupt it, and `ast.parse` raises
`SystemError: AST constructor recursion depth mismatch`. Every parse of ours goes through here.
"""
from __future__ import annotations

import ast
import threading

# Reentrant: a finalizer the collector runs mid-parse, in the same thread, may parse too.
_ONE_AT_A_TIME = threading.RLock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, taking its turn. Raises what `ast.parse` raises (SyntaxError, ValueError, ...)."""
    with _ONE_AT_A_TIME:
        return ast.parse(source, filename=filename)
