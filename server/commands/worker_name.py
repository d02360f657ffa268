"""A worker's name on this host: one per running worker, held by a lock for as long as it runs.

Two `crosscheck worker` started on one host with default names used to be both `sim@<host>`; the second
then fought the first over one row (docs/service.md §5). The default is now the first free slot of
`<modes>@<host>`, `<modes>-2@<host>`, ...: a restarted worker gets its old name back, two at once get two.
A name given with --name that a running worker holds is refused with a message saying so.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import socket
from pathlib import Path
from typing import IO

MAX_SLOTS = 64


class NameTaken(RuntimeError):
    """The worker name asked for is held by another running worker on this host."""


def lock_dir() -> Path:
    """`<cache>/worker-names-<uid>` (the calculator's cache dir), 0700."""
    from runtime.evidence.calculator import default_cache_dir

    d = default_cache_dir() / f"worker-names-{os.getuid()}"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def node_name(name: str) -> str:
    """Celery's node name for NAME: `NAME@<host>` unless it names its host itself."""
    return name if "@" in name else f"{name}@{socket.gethostname()}"


def _try_lock(where: Path, node: str) -> IO[str] | None:
    path = where / f"{hashlib.sha256(node.encode()).hexdigest()[:16]}.lock"
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        raise NameTaken(holder or node) from None
    f.seek(0)
    f.truncate()
    f.write(f"{node} pid {os.getpid()}\n")
    f.flush()
    return f


def claim(modes: list[str], name: str | None, where: Path | None = None) -> tuple[str, IO[str]]:
    """The worker's node name and the open lock file that holds it (pass it on to the worker process)."""
    where = where or lock_dir()
    if name is not None:
        node = node_name(name)
        try:
            lock = _try_lock(where, node)
        except NameTaken as exc:
            raise NameTaken(f"worker name {node!r} is taken by a running worker on this host ({exc}); "
                            "stop it, or give this one another --name") from None
        assert lock is not None
        return node, lock
    base = "+".join(dict.fromkeys(modes))
    for slot in range(1, MAX_SLOTS + 1):
        node = node_name(base if slot == 1 else f"{base}-{slot}")
        try:
            lock = _try_lock(where, node)
        except NameTaken:
            continue
        assert lock is not None
        return node, lock
    raise NameTaken(f"{MAX_SLOTS} workers named {base}@... already run on this host; give this one a --name")
