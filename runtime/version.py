"""The runtime's own version: the release plus a digest of its source, so any change to how
verdicts are reached gives a new version (a result is reused only under the same one)."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from runtime import __version__

HERE = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".toml", ".json")


@lru_cache(maxsize=1)
def runtime_version() -> str:
    """`0.1.0+<12 hex>`: the digest covers every source and rules file under runtime/."""
    h = hashlib.sha256()
    for path in sorted(p for p in HERE.rglob("*") if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts):
        h.update(path.relative_to(HERE).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{__version__}+{h.hexdigest()[:12]}"
