"""The sweeper: a background thread that keeps jobs moving when workers or messages get lost.

The broker is not the source of truth (docs/platform.md §1: the SQLite transport never redelivers, a
killed worker can lose its message), so every SWEEP_INTERVAL_S it:
- re-queues running jobs whose heartbeat expired (a new attempt), or fails them after max_attempts,
  each with a compare-and-set, so the sweepers of several API processes re-queue a job once;
- re-sends queued jobs older than 2 x stale_job_s whose message may be lost, backing off per job
  (the claim is attempt-guarded, so a duplicate message is harmless, only wasted);
- moves NPU jobs between queued and awaiting_npu as NPU workers come and go, and expires the ones
  that waited longer than NPU_WAIT_S (server/services/npu_wait.py);
- deletes consumed messages from the embedded SQLite broker's table, which kombu never does.
Messages are sent only after the sweep's transaction commits.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.queue import Producer
from server.services import jobs, npu_wait, outbox

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 15.0
RESEND_AFTER_STALE = 2.0  # re-send a queued job after this many stale_job_s without a claim
CONSUMED_MESSAGE_TTL_S = 300.0


@dataclass
class SweepReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    resent: list[int] = field(default_factory=list)
    npu: npu_wait.NpuWaitReport = field(default_factory=npu_wait.NpuWaitReport)
    purged: int = 0


class Sweeper:
    def __init__(self, maker: sessionmaker[Session], producer: Producer, settings: Settings,
                 interval_s: float = SWEEP_INTERVAL_S):
        self.maker, self.producer, self.settings, self.interval_s = maker, producer, settings, interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_resend: dict[tuple[int, int], tuple[float, float]] = {}  # (job, attempt) -> (when, backoff)

    def sweep_once(self) -> SweepReport:
        """One pass; the transaction commits before any message is sent."""
        report, sends = SweepReport(), []
        resend_after = RESEND_AFTER_STALE * self.settings.stale_job_s
        with self.maker() as session, session.begin():
            report.npu = npu_wait.sweep(session, self.settings)
            for job in jobs.stale_jobs(session, self.settings.stale_job_s):
                outcome = jobs.requeue_or_fail(session, job, self.settings.stale_job_s, self.settings.max_attempts)
                if outcome == jobs.REQUEUED:
                    report.requeued.append(job.id)
                    sends.append((job.id, job.attempts, job.queue, job.timeout_s))
                elif outcome == jobs.GAVE_UP:
                    report.failed.append(job.id)
            now, waiting = time.monotonic(), set()
            fair = self.settings.fair_dispatch
            for job in (outbox.unclaimed(session, resend_after) if fair else jobs.queued_jobs(session, resend_after)):
                waiting.add((job.id, job.attempts))
                if job.id not in report.requeued and self._due(job.id, job.attempts, now, resend_after):
                    report.resent.append(job.id)
                    sends.append((job.id, job.attempts, job.queue, job.timeout_s))
            self._next_resend = {k: v for k, v in self._next_resend.items() if k in waiting}
            if fair:  # the relay sends them as worker slots free up (server/services/dispatch.py)
                outbox.owe(session, [args[0] for args in sends])
                sends = []
        if fair and (report.requeued or report.resent):
            self.producer.wanted.set()
        sent = [(args[0], args[1]) for args in sends if self.producer.enqueue(*args)]
        if sent:
            with self.maker() as session, session.begin():
                for job_id, attempt in sent:
                    outbox.mark_sent(session, job_id, attempt)
        report.purged = self.producer.purge_consumed(CONSUMED_MESSAGE_TTL_S)
        npu = report.npu
        if npu.awaiting or npu.resumed or npu.expired:
            log.info("sweeper.npu awaiting=%s resumed=%s expired=%s", npu.awaiting, npu.resumed, npu.expired)
        if report.requeued or report.failed or report.resent or report.purged:
            log.info("sweeper.swept requeued=%s failed=%s resent=%s purged=%s",
                     report.requeued, report.failed, report.resent, report.purged)
        return report

    def _due(self, job_id: int, attempt: int, now: float, first_backoff_s: float) -> bool:
        """Re-send once now, then after doubling intervals, so a long wait does not flood the queue."""
        when, backoff = self._next_resend.get((job_id, attempt), (0.0, first_backoff_s))
        if now < when:
            return False
        self._next_resend[(job_id, attempt)] = (now + backoff, backoff * 2)
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sweep_once()
            except Exception:  # keep sweeping: a DB or broker outage must not kill the thread
                log.exception("sweeper.failed")
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="crosscheck-sweeper", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
