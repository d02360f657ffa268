"""Failed dashboard sign-ins counted per client address: past the limit, sign-ins wait (429).

In memory, per API process: a guess rate of `MAX_FAILURES` per `WINDOW_S` per address and process,
against 256-bit tokens (docs/SECURITY.md). Every failure is also in the audit log.
"""
from __future__ import annotations

import threading
import time

MAX_FAILURES = 10
WINDOW_S = 300.0
MAX_ADDRESSES = 10_000  # forgotten oldest first: the table itself stays bounded


class LoginThrottle:
    def __init__(self, max_failures: int = MAX_FAILURES, window_s: float = WINDOW_S):
        self.max_failures, self.window_s = max_failures, window_s
        self._failures: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, address: str) -> float:
        """Seconds until `address` may try again (0: now)."""
        with self._lock:
            recent = self._recent(address, time.monotonic())
            if len(recent) < self.max_failures:
                return 0.0
            return max(0.0, recent[0] + self.window_s - time.monotonic())

    def failed(self, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._failures[address] = [*self._recent(address, now), now][-self.max_failures:]
            if len(self._failures) > MAX_ADDRESSES:
                self._failures.pop(next(iter(self._failures)))

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)

    def _recent(self, address: str, now: float) -> list[float]:
        return [t for t in self._failures.get(address, []) if now - t < self.window_s]
