"""Background heartbeats: one per running job (cases can take minutes), one per worker."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from worker.client import ApiClient, ApiRejected, ApiUnavailable

log = logging.getLogger(__name__)


class Ticker:
    """Calls `beat` now and then every `interval_s` on a daemon thread until stopped."""

    def __init__(self, name: str, interval_s: float, beat: Callable[[], None]):
        self.interval_s = interval_s
        self._beat = beat
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        while True:
            try:
                self._beat()
            except (ApiUnavailable, ApiRejected) as exc:
                log.warning("heartbeat.failed thread=%s error=%s", self._thread.name, exc)
            except Exception:  # noqa: BLE001 - a heartbeat bug must not kill the thread
                log.exception("heartbeat.error thread=%s", self._thread.name)
            if self._stop.wait(self.interval_s):
                return

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)


class JobHeartbeat:
    """Keeps a claimed job alive on the server and learns whether it should stop."""

    def __init__(self, api: ApiClient, job_id: int, attempt: int, interval_s: float,
                 on_cancel: Callable[[], None] | None = None):
        self.api = api
        self.job_id = job_id
        self.attempt = attempt
        self.cancel_requested = False
        self.on_cancel = on_cancel  # kills the running case (the runtime's warm parent)
        self._progress: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._ticker = Ticker(f"job-heartbeat-{job_id}", interval_s, self.beat)

    def beat(self) -> None:
        with self._lock:
            progress = self._progress
        if self.api.heartbeat(self.job_id, self.attempt, progress):
            if not self.cancel_requested:
                log.info("job.cancel_requested job_id=%s attempt=%s", self.job_id, self.attempt)
                self.cancel_requested = True
                if self.on_cancel is not None:
                    self.on_cancel()
            self.cancel_requested = True

    def progress(self, progress: dict[str, Any]) -> bool:
        """Record progress and post it at once; returns False when the job should stop."""
        with self._lock:
            self._progress = progress
        try:
            self.beat()
        except (ApiUnavailable, ApiRejected) as exc:
            log.warning("job.progress_failed job_id=%s error=%s", self.job_id, exc)
        return not self.cancel_requested

    def __enter__(self) -> JobHeartbeat:
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ticker.stop()
