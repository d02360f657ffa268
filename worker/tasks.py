"""Thin Celery tasks: ids in, a job function does the work."""
from __future__ import annotations

import logging
import time

from celery import Task
from celery.exceptions import Reject, SoftTimeLimitExceeded

from worker import jobs, lifecycle
from jobqueue import TASK_RUN_JOB, parse_queue
from worker.app import app
from worker.client import ApiUnavailable, backoff_s

log = logging.getLogger(__name__)

CLAIM_MAX_RETRIES = 10  # about 5 minutes of backoff while the API is down
# Every card quarantined: the job goes back to the queue unclaimed, after this pause (no busy loop).
NO_CARD_BACKOFF_S = 30.0


@app.task(name=TASK_RUN_JOB, bind=True, max_retries=CLAIM_MAX_RETRIES)
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
        delay = backoff_s(self.request.retries, base_s=2.0, cap_s=60.0)
        log.warning("job.claim_retry job_id=%s attempt=%s in_s=%.0f error=%s", job_id, attempt, delay, exc)
        raise self.retry(exc=exc, countdown=delay) from None
