"""Temp dirs that a live process owns, and the sweep that removes those whose owner died.

A worker SIGKILLed or OOM-killed mid-job cannot remove its job dir, nor its warm parent's scratch.
Each such dir is therefore locked (flock) by the process that made it, for as long as it lives; the
kernel drops the lock when that process dies, however it dies. A starting worker or warm parent
sweeps the temp dir: a dir carrying our owner mark whose lock it can take has no live owner and
goes. Age never decides, and dirs of other users or without the mark are left alone (docs/service.md §4).
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

OWNER_MARK = ".crosscheck-owner"  # holds the owner's pid, for people; the lock is what counts
JOB_PREFIX = "crosscheck-job"  # worker job dirs: crosscheck-job<id>-XXXX
WARM_PREFIX = "crosscheck-warm-"  # a warm parent's scratch
RUN_PREFIX = "crosscheck-run-"  # `crosscheck run`'s work dir
DAEMON_PREFIX = "crosscheck-daemon-"  # a run daemon's scratch (runtime/warm/daemon_client.py)
SWEPT_PREFIXES = (JOB_PREFIX, WARM_PREFIX, RUN_PREFIX, DAEMON_PREFIX)


class OwnedDir:
    """A new temp dir, locked by this process until cleanup() or disown() (or its death)."""

    def __init__(self, prefix: str, parent: Path | None = None):
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        self._fd: int | None = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)  # close-on-exec
        # The mark comes after the lock: a sweep that sees the mark either gets the lock (we are
        # dead) or not, and a dir caught before its mark exists is skipped.
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        (self.path / OWNER_MARK).write_text(f"{os.getpid()}\n")

    def cleanup(self) -> None:
        """Remove the dir, then let go of the lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def disown(self) -> Path:
        """Keep the dir for the user (`crosscheck run --keep`): no longer ours, never swept."""
        (self.path / OWNER_MARK).unlink(missing_ok=True)
        self._release()
        return self.path

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def hold_shared(path: Path, make: Callable[[Path], object]) -> int:
    """A dir several processes use at once (a run daemon's scratch: the daemon and the runs it serves):
    made with `make` when missing, marked ours, and held with a shared lock; the fd holding it. The sweep
    (an exclusive lock) passes it by while any holder lives and removes it once the last one is gone."""
    while True:
        make(path)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a sweep removes it
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if same:  # else a sweep removed it between our open and our lock: make it again
            mark = path / OWNER_MARK
            if not mark.exists():
                mark.write_text(f"{os.getpid()}\n")
            return fd
        os.close(fd)


def release_shared(path: Path, fd: int) -> bool:
    """Let go of a hold_shared dir, removing it when no other holder is left; whether it was removed."""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another holder lives: the last one (or a later sweep) removes it
        shutil.rmtree(path, ignore_errors=True)
        return True
    finally:
        os.close(fd)


def sweep_dead(parent: Path | None = None) -> list[Path]:
    """Remove our temp dirs in `parent` (default: the temp dir) whose owner is dead; the dirs removed."""
    root = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    uid = os.geteuid()
    for entry in entries:
        if not entry.name.startswith(SWEPT_PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                continue  # another user's run: theirs to clean
        except OSError:
            continue
        if remove_if_dead(Path(entry.path)):
            removed.append(Path(entry.path))
    if removed:
        log.info("scratch.swept count=%s dirs=%s", len(removed), ",".join(p.name for p in removed))
    return removed


def remove_if_dead(path: Path) -> bool:
    """Remove `path` when it carries our owner mark and no live process holds its lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live process holds it
        if not (path / OWNER_MARK).exists():
            return False  # not made by OwnedDir, or disowned, or caught before its mark: not ours to judge
        shutil.rmtree(path, ignore_errors=True)
        return not path.exists()
    finally:
        os.close(fd)
