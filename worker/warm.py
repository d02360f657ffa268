"""The worker process's one long-lived warm parent, shared by every job it runs.

A warm parent imports torch and pypto once (3.5-5 s) and forks a sandboxed child per case. Each
Celery pool process keeps one, started in the background at process init (Celery gives a pool
process only a few seconds to come up), reused by every job, and restarted when it died.
"""
from __future__ import annotations

import logging
import threading

from runtime.warm import WarmParent

log = logging.getLogger(__name__)


class WarmHolder:
    """Lazily started, restartable warm parent; the lock makes start and use one at a time."""

    def __init__(self, mode: str = "sim"):
        self.mode = mode
        self._lock = threading.Lock()
        self._warm: WarmParent | None = None
        self._cancel = False  # the current job was cancelled
        self.starts = 0

    def _alive(self) -> bool:
        warm = self._warm
        return warm is not None and warm.proc is not None and warm.proc.poll() is None

    def get(self) -> WarmParent:
        """The running warm parent, starting (or restarting) it when needed."""
        with self._lock:
            if not self._alive():
                if self._warm is not None:
                    log.warning("warm.restart mode=%s reason=%s", self.mode, "the warm parent died")
                    self._warm.close()
                warm = WarmParent(self.mode)
                try:
                    warm.start()
                except BaseException:
                    warm.close()
                    self._warm = None
                    raise
                self._warm = warm
                self.starts += 1
                log.info("warm.started mode=%s pid=%s", self.mode, warm.info.get("pid"))
            assert self._warm is not None
            if self._cancel:
                self._warm.cancelled = True
            return self._warm

    def prestart(self) -> threading.Thread:
        """Start the warm parent in a background thread, so the first job need not wait for it."""
        def run() -> None:
            try:
                self.get()
            except Exception:  # noqa: BLE001 - the first job retries and reports the error
                log.exception("warm.prestart_failed mode=%s", self.mode)

        thread = threading.Thread(target=run, name="warm-prestart", daemon=True)
        thread.start()
        return thread

    def reset(self) -> None:
        """Throw the warm parent away (after it broke mid-job); the next get() starts a new one."""
        with self._lock:
            if self._warm is not None:
                self._warm.close()
                self._warm = None

    def clear_cancel(self) -> None:
        """A new job starts: an earlier job's cancel no longer applies."""
        self._cancel = False
        warm = self._warm
        if warm is not None:
            warm.cancelled = False

    def cancel_running(self) -> None:
        """Kill the case running now and send no more (from the heartbeat thread, without the lock:
        get() may hold it). A warm parent started later for this job starts cancelled."""
        self._cancel = True
        warm = self._warm
        if warm is not None:
            warm.cancel()

    @property
    def pid(self) -> int | None:
        warm = self._warm
        return warm.proc.pid if warm is not None and warm.proc is not None else None

    close = reset
