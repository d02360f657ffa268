"""Integers in paths and queries stay within the database's 64-bit range.

An id like 2**64 in `/jobs/{job_id}` reaches the database as a parameter that PostgreSQL
(NumericValueOutOfRange) and SQLite (OverflowError) cannot bind: a 500. Every route's integer path
and query parameters are checked here first, by their declared type, and answer 422 naming the
parameter.
"""
from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from fastapi import Request

from server.errors import InvalidInput

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _is_int(annotation: Any) -> bool:
    if annotation is int:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return int in get_args(annotation)
    return False


def _int_params(request: Request) -> list[tuple[str, str]]:
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return []
    out = []
    for where, params in (("path", dependant.path_params), ("query", dependant.query_params)):
        for param in params:
            if _is_int(param.field_info.annotation):
                out.append((where, param.alias))
    return out


async def int64_params(request: Request) -> None:
    """A dependency of every route: 422 for an integer path or query parameter outside int64 (`async def`: no
    I/O, so no hop through the thread pool on every request)."""
    for where, name in _int_params(request):
        source = request.path_params if where == "path" else request.query_params
        raw = source.get(name)
        if raw is None:
            continue
        text = str(raw).strip()
        digits = text.lstrip("+-")
        if digits.isascii() and digits.isdigit():  # not '²': isdigit() admits digits int() refuses
            value = int(text)
            if not INT64_MIN <= value <= INT64_MAX:
                raise InvalidInput(f"{where}.{name}: {text[:40]} is outside the 64-bit integer range")
