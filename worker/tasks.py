"""Thin Celery tasks: ids in, a job function does the work."""
from __future__ import annotations

import logging
import time

from celery import Task
from celery.exceptions import Reject, SoftTimeLimitExceeded

from worker import jobs, lifecycle
from jobqueue import TASK_RUN_JOB, parse_queue
from worker.app import app
from worker.client import ApiUnavailable

log = logging.getLogger(__name__)

# While the API is down the claim is retried by Celery with exponential backoff (2, 4, ... 60 s:
# up to about 5 minutes over 10 retries) and full jitter, so the workers of a fleet never retry in lockstep.
CLAIM_MAX_RETRIES = 10
CLAIM_BACKOFF_S = 2
CLAIM_BACKOFF_MAX_S = 60
# Every card quarantined: the job goes back to the queue unclaimed, after this pause (no busy loop).
NO_CARD_BACKOFF_S = 30.0


@app.task(name=TASK_RUN_JOB, bind=True, autoretry_for=(ApiUnavailable,), max_retries=CLAIM_MAX_RETRIES,
          retry_backoff=CLAIM_BACKOFF_S, retry_backoff_max=CLAIM_BACKOFF_MAX_S, retry_jitter=True)
def run(self: Task, job_id: int, attempt: int) -> str:
    """Run one job attempt. Retried only when the API could not be reached to claim it;
    a kernel failure is a result, never a retry."""
    ctx = lifecycle.job_context(self.request.hostname or "worker")
    queue = str((self.request.delivery_info or {}).get("routing_key") or "")
    if parse_queue(queue)[0] == "npu" and ctx.cards is not None and not ctx.cards.usable():
        # Not claimed, so it stays queued (awaiting_npu while no worker has a usable card).
        log.warning("job.no_usable_card job_id=%s; every card is quarantined, giving the job back", job_id)
        time.sleep(NO_CARD_BACKOFF_S)
        raise Reject("every NPU card of this worker is quarantined", requeue=True)
    try:
        return jobs.run_job(ctx, int(job_id), int(attempt), interrupts=(SoftTimeLimitExceeded,))
    except ApiUnavailable as exc:
        log.warning("job.claim_retry job_id=%s attempt=%s retry=%s error=%s", job_id, attempt,
                    self.request.retries + 1, exc)
        raise  # autoretry_for: Celery sends it again after the jittered backoff
