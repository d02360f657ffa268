"""The worker's NPU cards: one job per card at a time, across all of the worker's pool processes.

Each card has a lock file; a job holds an exclusive flock on it while it runs there. The kernel drops
the lock when the holder exits, however it exits, so a killed pool process never leaks a card. The
file holds the job id, so the heartbeat can say which job uses which card.
"""
from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

POLL_S = 0.2
CARD_WAIT_S = 900.0  # a job waits this long for a free card before it gives up


class NoUsableCard(RuntimeError):
    """Every card of this worker is quarantined (or excluded): waiting would not help."""


class NoFreeCard(RuntimeError):
    """Every usable card stayed busy for the whole wait."""


class CardPool:
    """Hands out cards; `blocked` tells which are quarantined (the health ledger's answer)."""

    def __init__(self, devices: list[int], state_dir: Path, blocked: Callable[[], set[int]] = set):
        self.devices = sorted(devices)
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.blocked = blocked

    def _path(self, card: int) -> Path:
        return self.state_dir / f"card-{card}.lock"

    def usable(self, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
        blocked = self.blocked()
        return [c for c in self.devices if c not in blocked and c not in exclude]

    def _try(self, card: int, job_id: int | None) -> int | None:
        fd = os.open(self._path(card), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(job_id if job_id is not None else "").encode(), 0)
        return fd

    @contextmanager
    def card(self, job_id: int | None = None, exclude: set[int] | frozenset[int] = frozenset(),
             wait_s: float = CARD_WAIT_S) -> Iterator[int]:
        """Hold a free usable card (the lowest free id) for the block; waits up to wait_s."""
        deadline = time.monotonic() + wait_s
        while True:
            candidates = self.usable(exclude)
            if not candidates:
                raise NoUsableCard(self._why_none(exclude))
            for card in candidates:
                fd = self._try(card, job_id)
                if fd is not None:
                    try:
                        yield card
                    finally:
                        os.ftruncate(fd, 0)
                        os.close(fd)  # releases the flock
                    return
            if time.monotonic() >= deadline:
                raise NoFreeCard(f"card(s) {', '.join(map(str, candidates))} stayed busy for {wait_s:.0f} s")
            time.sleep(POLL_S)

    def _why_none(self, exclude: set[int] | frozenset[int]) -> str:
        blocked = sorted(set(self.devices) & self.blocked())
        parts = []
        if blocked:
            parts.append(f"quarantined: {', '.join(map(str, blocked))}")
        if exclude:
            parts.append(f"excluded: {', '.join(map(str, sorted(exclude)))}")
        return f"no usable NPU card among {', '.join(map(str, self.devices)) or 'none'} ({'; '.join(parts)})"

    def busy(self) -> dict[int, int | None]:
        """Cards in use now: card -> job id (None when the holder wrote none)."""
        held: dict[int, int | None] = {}
        for card in self.devices:
            path = self._path(card)
            if not path.exists():
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
                    held[card] = int(text) if text.isdigit() else None
            finally:
                os.close(fd)
        return held
