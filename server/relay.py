"""The relay: a background thread that sends the outbox's owed messages to the broker (docs/platform.md §3).

Every RELAY_INTERVAL_S it
- looks whether the broker lost its messages (Redis restarted empty or flushed: the key it leaves there is
  gone) and, if so, makes every waiting job owed again;
- sends each owed job queued more than RELAY_GRACE_S ago (a younger one is still its request's to send),
  oldest first, and marks it sent; the first refused send ends the pass (the broker is down).
So a 202 means durably queued: the job row and its debt commit together, and the broker gets the message
within seconds of coming back. A duplicate message is harmless (the claim is a compare-and-set).
"""
from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.queue import Producer
from server.services import dispatch, outbox

log = logging.getLogger(__name__)

RELAY_INTERVAL_S = 1.0
RELAY_GRACE_S = 2.0


class Relay:
    def __init__(self, maker: sessionmaker[Session], producer: Producer, settings: Settings,
                 interval_s: float = RELAY_INTERVAL_S, grace_s: float = RELAY_GRACE_S):
        self.maker, self.producer, self.settings = maker, producer, settings
        self.interval_s, self.grace_s = interval_s, grace_s
        self.served: dispatch.Served = {}  # round-robin memory of fair dispatch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def relay_once(self) -> list[int]:
        """One pass; the ids of the jobs sent."""
        if self.producer.broker_emptied():
            with self.maker() as session, session.begin():
                owed = outbox.forget_sent(session)
            self.producer.mark_broker()  # after the debts are written: a crash in between re-sends, never loses
            log.warning("broker.emptied owed_again=%s", owed)
        sent: list[int] = []
        with self.maker() as session, session.begin():
            if self.settings.fair_dispatch:
                dispatch.lock(session)
                due = dispatch.pick(session, self.settings, self.served)
            else:
                due = outbox.pending(session, self.grace_s)
            for job in due:
                if not self.producer.enqueue(job.id, job.attempts, job.queue, job.timeout_s):
                    break
                outbox.mark_sent(session, job.id, job.attempts)
                sent.append(job.id)
        if sent:
            log.info("relay.sent jobs=%s", sent)
        return sent

    def _run(self) -> None:
        while not self._stop.is_set():
            self.producer.wanted.clear()  # before the pass: a wake during it is not lost
            try:
                self.relay_once()
            except Exception:  # keep relaying: a DB or broker outage must not kill the thread
                log.warning("relay.failed", exc_info=True)
            self.producer.wanted.wait(self.interval_s)  # a new job wakes it early

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="crosscheck-relay", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self.producer.wanted.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
