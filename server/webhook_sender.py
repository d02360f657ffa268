"""A background thread of the API process: delivers due webhooks and settles suite runs whose last
job ended without reporting (a cancel while queued, a worker lost for good)."""
from __future__ import annotations

import logging
import threading

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.models import SuiteRun
from server.models.suite_run import OPEN
from server.services import suite_runs, webhooks

log = logging.getLogger(__name__)

INTERVAL_S = 2.0


def settle_open_runs(maker: sessionmaker[Session]) -> int:
    """Settle every closed, unfinished run; how many finished."""
    finished = 0
    with maker.begin() as session:
        for run in session.scalars(select(SuiteRun).where(SuiteRun.status == OPEN, SuiteRun.closed_at.is_not(None))):
            finished += suite_runs.settle(session, run)
    return finished


class WebhookSender:
    def __init__(self, maker: sessionmaker[Session], settings: Settings, interval_s: float = INTERVAL_S):
        self.maker, self.settings, self.interval_s = maker, settings, interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        with webhooks.new_http(self.settings) as http:
            while not self._stop.is_set():
                try:
                    settle_open_runs(self.maker)
                    webhooks.deliver_due(self.maker, self.settings, http)
                except Exception:  # keep going: a DB outage must not kill the thread
                    log.exception("webhook_sender.failed")
                self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="crosscheck-webhooks", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
