"""Where the run daemon listens and which daemon is the right one (docs/run-daemon.md).

Light on purpose: `crosscheck run`'s thin start (runtime/cli/handoff.py) needs the socket and the digest
before it hands a run over, without importing the runtime it hands the run to.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from runtime.version import runtime_version
from runtime.warm.inherit import parent_environment


NO_DAEMON_ENV = "CROSSCHECK_NO_DAEMON"  # set: every run starts a private warm parent


class DaemonPlaceError(RuntimeError):
    """The daemon's directory is not ours: no run daemon there."""


def socket_dir(cache_dir: Path, create: bool = True) -> Path:
    """`<cache>/run-daemon-<uid>`, 0700: only its owner reaches the socket (the daemon also checks)."""
    d = Path(cache_dir) / f"run-daemon-{os.getuid()}"
    if create:
        d.mkdir(parents=True, exist_ok=True)
    if d.stat().st_uid != os.getuid():
        raise DaemonPlaceError(f"{d} belongs to another user: not using a run daemon there")
    if create:
        d.chmod(0o700)
    return d


def socket_name(mode: str, cwd: str | None = None) -> str:
    """`<mode>-<dir key>.sock`: one daemon per starting dir, so runs from two dirs (two terminals) each keep
    theirs instead of replacing each other's (the dir is part of the digest: docs/run-daemon.md)."""
    where = os.path.realpath(cwd if cwd is not None else os.getcwd())
    return f"{mode}-{hashlib.sha256(where.encode()).hexdigest()[:12]}.sock"


def socket_path(cache_dir: Path, mode: str, create: bool = True, cwd: str | None = None) -> Path:
    return socket_dir(cache_dir, create) / socket_name(mode, cwd)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def source_digest(mode: str) -> str:
    """What the daemon's imports and environment depend on: our code, pypto, torch, the interpreter and
    the parent's environment, and the starting dir, which its jobs must never see (runtime.fence.hostview
    learns it once, at the daemon's start). A daemon with another digest is replaced."""
    parts = [runtime_version(), _version("pypto"), _version("torch"), sys.executable, mode,
             json.dumps(parent_environment(mode), sort_keys=True), os.path.realpath(os.getcwd())]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
