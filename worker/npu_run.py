"""An NPU job on this worker's cards: run it on a free card, and on a device-level failure run it
once more on another card before the kernel is blamed (docs/npu.md §4).

| first card | other card             | verdicts stored     | the ledger                                    |
|------------|------------------------|---------------------|-----------------------------------------------|
| clean      | -                      | the first run's     | first card: ok                                |
| device     | clean                  | the second run's    | first card: a failure in a row; second: ok    |
| device     | device                 | the second run's    | neither card: the kernel is blamed            |
| device     | none free or usable    | the first run's     | first card: a failure (nothing to tell apart) |

The whole job moves to the other card, never single cases: a report's timings then come from one
card, and timings are never compared across cards.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from runtime.report import Report
from worker.card_health import CardLedger
from worker.card_pool import CardPool, NoFreeCard, NoUsableCard

log = logging.getLogger(__name__)

# Diagnosis rules (runtime/judge/rules/diagnosis.toml) that point at the card or its driver, not the kernel.
DEVICE_RULES = ("npu-device-error", "npu-driver-cann-too-old", "npu-aicore-exception", "npu-handshake-timeout")
# A case that hangs where the card works (setting it up, the launch, the timing loop) may be the card's.
HANG_STAGES = ("device", "npu", "timing")
RETRY_WAIT_S = 600.0


def device_failure(report: Report) -> dict[str, Any] | None:
    """The first case whose failure points at the card: its rule and evidence; None when clean."""
    for case in report.cases:
        rules = [d for d in case.diagnosis if d.rule in DEVICE_RULES]
        if rules:
            return {"case": case.case, "rule": rules[0].rule, "summary": f"{rules[0].rule}: {rules[0].evidence}"[:300]}
        if case.verdict == "timeout" and case.stage in HANG_STAGES:
            return {"case": case.case, "rule": "hang", "summary": f"hung in the {case.stage} stage (timeout)"}
    return None


def run_on_cards(pool: CardPool, ledger: CardLedger, job_id: int, run: Callable[[int], Report]) -> Report:
    """`run(card)` runs the job on a card; returns the report to store, its attempts in environment.npu."""
    with pool.card(job_id=job_id) as first:
        report = run(first)
    failure = None if report.cancelled else device_failure(report)
    if failure is None:
        ledger.record_ok(first)
        return _attempts(report, [{"device_id": first, "outcome": "ok"}])
    log.warning("npu.device_failure job_id=%s card=%s rule=%s; retrying on another card", job_id, first,
                failure["rule"])
    try:
        with pool.card(job_id=job_id, exclude={first}, wait_s=RETRY_WAIT_S) as second:
            retry = run(second)
    except (NoUsableCard, NoFreeCard) as exc:
        quarantined = ledger.record_failure(first, {**failure, "job_id": job_id})
        return _attempts(report, [{"device_id": first, "outcome": "device failure", **failure,
                                   "counted_against_card": True, "quarantined": quarantined,
                                   "retry": f"not retried: {exc}"}])
    again = None if retry.cancelled else device_failure(retry)
    first_row = {"device_id": first, "outcome": "device failure", **failure}
    if again is None:
        quarantined = ledger.record_failure(first, {**failure, "job_id": job_id})
        ledger.record_ok(second)
        first_row.update(counted_against_card=True, quarantined=quarantined)
        return _attempts(retry, [first_row, {"device_id": second, "outcome": "ok"}])
    first_row["counted_against_card"] = False
    return _attempts(retry, [first_row, {"device_id": second, "outcome": "device failure", **again,
                                         "counted_against_card": False,
                                         "blame": "the kernel: it failed the same way on two cards"}])


def _attempts(report: Report, attempts: list[dict[str, Any]]) -> Report:
    report.environment.npu["attempts"] = attempts
    return report
