"""Webhooks on regressions: queue a JSON payload per finished run that regressed, deliver it with
retries and exponential backoff, and log every attempt.

The HTTP call never runs inside a transaction: a delivery is claimed (its next attempt pushed out
by a lease, compare-and-set, so two API processes never send it twice), sent, then recorded.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx2 as httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from runtime import vocabulary
from server.config import Settings
from server.models import Suite, SuiteRun, WebhookDelivery
from server.models.base import utcnow
from server.models.webhook import DELIVERED, FAILED, PENDING
from server.services import webhook_targets

log = logging.getLogger(__name__)

EVENT_REGRESSIONS = "suite_run.regressions"
EVENT_CULPRITS = "suite_run.culprits"  # a follow-up: the commits a bisect named for the regressed operators
PAYLOAD_CHANGES = 200  # regressions listed in one payload; `counts` has the full number
LEASE_S = 120.0  # a claimed delivery is not claimed again for this long
LOG_ERROR_CHARS = 500
USER_AGENT = "PTO-Crosscheck-Webhook/1"


def _run_part(run: SuiteRun) -> dict[str, Any]:
    return {"id": run.id, "run_key": run.run_key, "labels": run.labels, "branch": run.branch,
            "commit": run.commit, "pipeline_url": run.pipeline_url, "url": f"/suite-runs/{run.id}"}


def payload_for(suite: Suite, run: SuiteRun, comparison: Any) -> dict[str, Any]:
    """The JSON sent; the page URL is a path here and made absolute with PUBLIC_URL when sent."""
    data = comparison.as_dict(limit=PAYLOAD_CHANGES)
    totals = run.totals or {}
    return {
        "event": EVENT_REGRESSIONS, "suite": suite.name, "suite_run": _run_part(run),
        "previous_run_id": run.previous_run_id, "counts": data["counts"],
        "regressions": data["regressions"], "new_flags": data["new_flags"],
        # the run's cases by outcome, in the words every surface uses (runtime.vocabulary)
        "outcomes": {vocabulary.word(o): n for o, n in (totals.get("outcomes") or {}).items()},
        "gate": vocabulary.GATE_NOTE,
    }


def _digest(payload: dict[str, Any], news: str) -> str:
    substance = {"suite_run": payload["suite_run"]["id"], news: payload[news]}
    return hashlib.sha256(json.dumps(substance, sort_keys=True, default=str).encode()).hexdigest()


def owner_news(suite: Suite, run: SuiteRun) -> bool:
    """Whether the suite's webhook may carry news of this run: only the suite owner's runs, whose
    content (and pipeline URL) its owner wrote, are signed with the suite's secret."""
    return bool(suite.webhook_url) and bool(suite.created_by) and run.created_by == suite.created_by


def _enqueue(session: Session, suite: Suite, run: SuiteRun, payload: dict[str, Any], news: str
             ) -> WebhookDelivery | None:
    """A delivery of this payload, unless the same news (payload[news]) was already queued for the run."""
    if not owner_news(suite, run):
        return None
    digest = _digest(payload, news)
    if session.scalar(select(WebhookDelivery.id).where(WebhookDelivery.suite_run_id == run.id,
                                                       WebhookDelivery.digest == digest)):
        return None
    delivery = WebhookDelivery(suite_run_id=run.id, event=payload["event"], url=suite.webhook_url,
                               payload=payload, digest=digest, status=PENDING, attempts=0, next_attempt_at=utcnow(),
                               log=[])
    session.add(delivery)
    session.flush()
    log.info("webhook.queued delivery_id=%s suite_run_id=%s event=%s", delivery.id, run.id, payload["event"])
    return delivery


def enqueue_regressions(session: Session, suite: Suite, run: SuiteRun, comparison: Any) -> WebhookDelivery | None:
    """A delivery for this run's regressions, unless the same news was already queued."""
    return _enqueue(session, suite, run, payload_for(suite, run, comparison), "regressions")


def enqueue_culprits(session: Session, suite: Suite, run: SuiteRun, culprits: list[dict[str, str]]
                     ) -> WebhookDelivery | None:
    """A follow-up naming each regressed operator's culprit commit, with the regressions it explains."""
    ops = {c["operator"] for c in culprits}
    regressions = [c for c in (run.compare or {}).get("regressions", []) if c.get("operator") in ops]
    slower = [p for p in (run.totals or {}).get("perf_regressions", []) if p.get("operator") in ops]
    payload = {"event": EVENT_CULPRITS, "suite": suite.name, "suite_run": _run_part(run),
               "previous_run_id": run.previous_run_id, "culprits": culprits, "regressions": regressions,
               "perf_regressions": slower}
    return _enqueue(session, suite, run, payload, "culprits")


def backoff_s(settings: Settings, attempts: int) -> float:
    """Wait before the next try after `attempts` failures: base, 2 x base, 4 x base, ..."""
    return float(settings.webhook_backoff_s * 2 ** max(0, attempts - 1))


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Claimed:
    id: int
    url: str
    body: bytes
    event: str
    secret: str | None


def _absolute(payload: dict[str, Any], public_url: str) -> dict[str, Any]:
    page = payload.get("suite_run", {}).get("url", "")
    if public_url and page.startswith("/"):
        return {**payload, "suite_run": {**payload["suite_run"], "url": public_url.rstrip("/") + page}}
    return payload


def _claim_due(maker: sessionmaker[Session], now: datetime, limit: int, public_url: str = "") -> list[Claimed]:
    claimed = []
    with maker.begin() as session:
        due = session.execute(select(WebhookDelivery.id, WebhookDelivery.next_attempt_at)
                              .where(WebhookDelivery.status == PENDING, WebhookDelivery.next_attempt_at <= now)
                              .order_by(WebhookDelivery.next_attempt_at).limit(limit)).all()
        for delivery_id, when in due:
            won = session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id,
                                                                WebhookDelivery.next_attempt_at == when)
                                  .values(next_attempt_at=now + timedelta(seconds=LEASE_S))
                                  .execution_options(synchronize_session=False)).rowcount == 1
            if not won:
                continue
            d = session.get(WebhookDelivery, delivery_id)
            assert d is not None
            run = session.get(SuiteRun, d.suite_run_id)
            suite = session.get(Suite, run.suite_id) if run else None
            body = json.dumps(_absolute(d.payload, public_url), sort_keys=True, default=str).encode()
            claimed.append(Claimed(d.id, d.url, body, d.event, suite.webhook_secret if suite else None))
    return claimed


def _send(http: httpx.Client, c: Claimed, allow_loopback: bool) -> tuple[int | None, str | None, float]:
    refused = webhook_targets.refusal(c.url, allow_loopback, resolve=True)
    if refused:
        return None, f"not sent: {refused}"[:LOG_ERROR_CHARS], 0.0
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Crosscheck-Event": c.event,
               "X-Crosscheck-Delivery": str(c.id)}
    if c.secret:
        headers["X-Crosscheck-Signature"] = signature(c.secret, c.body)
    start = time.perf_counter()
    try:
        response = http.post(c.url, content=c.body, headers=headers)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:LOG_ERROR_CHARS], time.perf_counter() - start
    # Only the status: the receiver's answer is not ours to show to every reader of the delivery log.
    error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    return response.status_code, error, time.perf_counter() - start


def _record(maker: sessionmaker[Session], settings: Settings, c: Claimed, code: int | None, error: str | None,
            took_s: float, now: datetime) -> str:
    with maker.begin() as session:
        d = session.get(WebhookDelivery, c.id)
        assert d is not None
        d.attempts += 1
        d.last_status_code, d.last_error = code, error
        d.log = [*d.log, {"at": now.isoformat(), "status_code": code, "error": error,
                          "duration_ms": round(took_s * 1000, 1)}]
        if error is None:
            d.status, d.delivered_at = DELIVERED, now
        elif d.attempts >= settings.webhook_max_attempts:
            d.status = FAILED
        else:
            d.next_attempt_at = now + timedelta(seconds=backoff_s(settings, d.attempts))
        log.info("webhook.attempt delivery_id=%s attempt=%s status=%s code=%s", d.id, d.attempts, d.status, code)
        return d.status


def deliver_due(maker: sessionmaker[Session], settings: Settings, http: httpx.Client,
                now: datetime | None = None, limit: int = 20) -> list[tuple[int, str]]:
    """Send every due delivery once; (delivery id, status after the attempt) for each."""
    now = now or utcnow()
    out = []
    for c in _claim_due(maker, now, limit, settings.public_url):
        code, error, took = _send(http, c, settings.webhook_allow_loopback)
        out.append((c.id, _record(maker, settings, c, code, error, took, now)))
    return out


def new_http(settings: Settings) -> httpx.Client:
    # No redirects: the receiver is the configured URL, not wherever it points us to.
    return httpx.Client(timeout=settings.webhook_timeout_s, follow_redirects=False)
