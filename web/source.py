"""Source excerpts for diagnosis cards and lint findings, read from the stored submission bundle."""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from runtime.intake import archive

MAX_SOURCE_BYTES = 1024 * 1024  # a kernel source larger than this is not shown
MAX_FILES = 200
CONTEXT_LINES = 3


def bundle_sources(data: bytes, filename: str) -> dict[str, str]:
    """{relative path: text} of the .py files in a bundle (a .py, .zip or .tar.gz), read in memory
    by the one archive reader; an archive it refuses shows no source."""
    if filename.lower().endswith(".py"):
        return {PurePosixPath(filename).name: data[:MAX_SOURCE_BYTES].decode("utf-8", "replace")}
    if not archive.is_archive(PurePosixPath(filename)):
        return {}
    try:
        files = archive.read_files(data, filename, lambda p: p.suffix == ".py", MAX_SOURCE_BYTES, MAX_FILES)
    except archive.UnsafeArchive:
        return {}
    return {name: text.decode("utf-8", "replace") for name, text in files.items()}


def find_file(sources: dict[str, str], reported: str) -> str | None:
    """The bundle path a runtime-reported file means. The runtime reports paths inside its job
    folder (…/src/pkg/x_impl.py) or relative ones; match the longest common tail."""
    if not reported:
        return None
    parts = PurePosixPath(reported.replace("\\", "/")).parts
    if "src" in parts:
        parts = parts[len(parts) - parts[::-1].index("src"):]
    best, best_len = None, 0
    for path in sources:
        mine = PurePosixPath(path).parts
        n = 0
        while n < min(len(mine), len(parts)) and mine[-1 - n] == parts[-1 - n]:
            n += 1
        if n > best_len:
            best, best_len = path, n
    return best


def excerpt(sources: dict[str, str], reported: str, line: int, context: int = CONTEXT_LINES) -> dict[str, Any] | None:
    """{file, line, lines: [{no, text, hit}]} around `line`, or None when the file or line is unknown."""
    path = find_file(sources, reported)
    if path is None or not line or line < 1:
        return None
    lines = sources[path].splitlines()
    if line > len(lines):
        return None
    lo, hi = max(1, line - context), min(len(lines), line + context)
    return {"file": path, "line": line,
            "lines": [{"no": n, "text": lines[n - 1], "hit": n == line} for n in range(lo, hi + 1)]}
