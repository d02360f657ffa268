"""The card pool under concurrency, the health ledger, and the retry-on-another-card policy.

The policy tests give run_on_cards real runtime Reports (built from the runtime's own dataclasses)
with the diagnoses a failing card produces; the end-to-end run through a real worker and the
torch_npu test double is tests/e2e/test_npu_double.py.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

from runtime.report import CaseResult, Diagnosis, Environment, Report, Submission
from worker.card_health import CardLedger
from worker.card_pool import CardPool, NoFreeCard, NoUsableCard
from worker.npu_run import device_failure, run_on_cards

HOLD_S = 0.05


def _hold_cards(state: str, log: str, n: int, together: Any = None) -> None:
    """In a separate process: take a card n times, logging enter/leave with the card id. With a barrier,
    the first card is held until as many holders as the barrier's parties hold one at once."""
    pool = CardPool([0, 1, 2], Path(state))
    for i in range(n):
        with pool.card(job_id=os.getpid()) as card:
            with open(log, "a") as f:
                f.write(f"+{card}\n")
                f.flush()
            if together is not None and i == 0:
                together.wait(timeout=120)  # three cards held at once, however slowly the processes start
            time.sleep(HOLD_S)
            with open(log, "a") as f:
                f.write(f"-{card}\n")
                f.flush()


def test_one_job_per_card_across_processes(tmp_path: Path) -> None:
    """Six processes contend for three cards: a card is never held twice, and all three get used."""
    log = tmp_path / "log"
    ctx = multiprocessing.get_context("spawn")
    together = ctx.Barrier(3)
    procs = [ctx.Process(target=_hold_cards, args=(str(tmp_path / "state"), str(log), 4, together)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    held: set[str] = set()
    used: set[str] = set()
    for event in log.read_text().split():
        card = event[1:]
        if event[0] == "+":
            assert card not in held, f"card {card} taken twice"
            held.add(card)
            used.add(card)
        else:
            held.remove(card)
    assert used == {"0", "1", "2"} and len(log.read_text().split()) == 6 * 4 * 2


def test_a_busy_card_shows_its_job_and_is_skipped(tmp_path: Path) -> None:
    pool = CardPool([0, 1], tmp_path)
    with pool.card(job_id=41) as first:
        assert first == 0 and pool.busy() == {0: 41}
        with pool.card(job_id=42) as second:
            assert second == 1 and pool.busy() == {0: 41, 1: 42}
            with pytest.raises(NoFreeCard, match="stayed busy"):
                with pool.card(job_id=43, wait_s=0.3):
                    pass
    assert pool.busy() == {}


def test_a_killed_holder_gives_its_card_back(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_hold_cards, args=(str(tmp_path), str(tmp_path / "log"), 1000))
    proc.start()
    pool = CardPool([0, 1, 2], tmp_path)
    deadline = time.monotonic() + 60
    while not pool.busy() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.join()
    assert pool.busy() == {}


def test_quarantined_and_excluded_cards_are_never_handed_out(tmp_path: Path) -> None:
    pool = CardPool([0, 1, 2], tmp_path, blocked=lambda: {0})
    with pool.card(exclude={1}) as card:
        assert card == 2
    with pytest.raises(NoUsableCard, match=r"no usable NPU card among 0, 1, 2 \(quarantined: 0; excluded: 1, 2\)"):
        with pool.card(exclude={1, 2}):
            pass


def test_the_ledger_quarantines_after_n_failures_in_a_row(tmp_path: Path) -> None:
    ledger = CardLedger(tmp_path / "cards.json", quarantine_after=3)
    failure = {"rule": "npu-device-error", "summary": "npu-device-error: error code is 507033"}
    assert ledger.record_failure(3, failure) is False
    ledger.record_ok(3)  # a good job ends the run of failures
    assert not ledger.record_failure(3, failure) and not ledger.record_failure(3, failure)
    assert ledger.record_failure(3, failure) is True
    row = ledger.snapshot()[3]
    assert row["failures_in_row"] == 3 and row["failures"] == 4 and row["jobs_ok"] == 1
    assert row["reason"].startswith("3 device-level failures in a row; last: npu-device-error")
    assert ledger.quarantined() == {3}
    # kept across restarts: a new ledger on the same file
    assert CardLedger(tmp_path / "cards.json").quarantined() == {3}


def test_a_release_is_applied_once(tmp_path: Path) -> None:
    ledger = CardLedger(tmp_path / "cards.json", quarantine_after=1)
    ledger.record_failure(5, {"rule": "hang"})
    assert ledger.apply_releases({"5": 1}) == [5]
    assert ledger.quarantined() == set() and ledger.snapshot()[5]["failures_in_row"] == 0
    ledger.record_failure(5, {"rule": "hang"})  # quarantined again
    assert ledger.apply_releases({"5": 1}) == []  # the old release number does not release it twice
    assert ledger.quarantined() == {5}
    assert ledger.apply_releases({"5": 2}) == [5]


def test_a_damaged_ledger_is_kept_aside(tmp_path: Path) -> None:
    path = tmp_path / "cards.json"
    path.write_text("{not json")
    ledger = CardLedger(path)
    assert ledger.snapshot() == {}
    assert (tmp_path / "cards.damaged").read_text() == "{not json"


# --- the retry policy -------------------------------------------------------------------------

def report(verdict: str = "structural_error", rules: tuple[str, ...] = (), stage: str = "npu") -> Report:
    case = CaseResult(operator="relu", case="c1", verdict=verdict, stage=stage,
                      diagnosis=[Diagnosis(rule=r, cause="", fix="", sim_only=False, evidence=f"{r} text")
                                 for r in rules])
    env = Environment(pypto="0.2.0", torch="2.13.0", python="3.11", host="h", cann="8.5.0")
    return Report(submission=Submission(kind="package", name="relu", sha256="0"), mode="npu", environment=env,
                  cases=[case])


DEVICE_FAIL = ("npu-driver-cann-too-old", "npu-device-error")


def runner(outcomes: dict[int, Report], calls: list[int]):  # type: ignore[no-untyped-def]
    def run(card: int) -> Report:
        calls.append(card)
        return outcomes[card]
    return run


def test_device_failures_are_the_cards_rules_and_hangs() -> None:
    assert device_failure(report(rules=("vec-tile-shape-not-set",))) is None
    assert device_failure(report(rules=DEVICE_FAIL))["rule"] == "npu-driver-cann-too-old"
    assert device_failure(report(rules=("npu-aicore-exception",)))["rule"] == "npu-aicore-exception"
    assert device_failure(report(verdict="timeout", stage="device"))["rule"] == "hang"
    assert device_failure(report(verdict="timeout", stage="golden")) is None  # a slow golden is not the card's


@pytest.fixture
def cards(tmp_path: Path) -> tuple[CardPool, CardLedger]:
    ledger = CardLedger(tmp_path / "cards.json", quarantine_after=2)
    return CardPool([3, 4], tmp_path, blocked=ledger.quarantined), ledger


def test_clean_on_the_first_card(cards) -> None:  # type: ignore[no-untyped-def]
    pool, ledger = cards
    calls: list[int] = []
    out = run_on_cards(pool, ledger, 1, runner({3: report()}, calls))
    assert calls == [3] and out.environment.npu["attempts"] == [{"device_id": 3, "outcome": "ok"}]
    assert ledger.snapshot()[3]["jobs_ok"] == 1


def test_a_card_failure_moves_the_job_and_counts_against_the_card(cards) -> None:  # type: ignore[no-untyped-def]
    pool, ledger = cards
    calls: list[int] = []
    good = report(verdict="structural_error", rules=("vec-tile-shape-not-set",))
    out = run_on_cards(pool, ledger, 7, runner({3: report(rules=DEVICE_FAIL), 4: good}, calls))
    assert calls == [3, 4] and out is good
    first, second = out.environment.npu["attempts"]
    assert first["device_id"] == 3 and first["counted_against_card"] is True and first["quarantined"] is False
    assert second == {"device_id": 4, "outcome": "ok"}
    assert ledger.snapshot()[3]["failures_in_row"] == 1 and ledger.snapshot()[3]["last_failure"]["job_id"] == 7
    # the second such job quarantines card 3; the third goes straight to card 4
    run_on_cards(pool, ledger, 8, runner({3: report(rules=DEVICE_FAIL), 4: good}, calls))
    assert ledger.quarantined() == {3}
    calls.clear()
    run_on_cards(pool, ledger, 9, runner({4: good}, calls))
    assert calls == [4]


def test_failing_on_two_cards_blames_the_kernel(cards) -> None:  # type: ignore[no-untyped-def]
    pool, ledger = cards
    calls: list[int] = []
    out = run_on_cards(pool, ledger, 1, runner({3: report(rules=("npu-aicore-exception",)),
                                                4: report(rules=("npu-aicore-exception",))}, calls))
    assert calls == [3, 4]
    assert [a["counted_against_card"] for a in out.environment.npu["attempts"]] == [False, False]
    assert "the kernel" in out.environment.npu["attempts"][1]["blame"]
    assert ledger.snapshot().get(3, {}).get("failures", 0) == 0


def test_with_no_other_card_the_failure_counts_and_the_first_report_stands(tmp_path: Path) -> None:
    ledger = CardLedger(tmp_path / "cards.json", quarantine_after=1)
    pool = CardPool([5], tmp_path, blocked=ledger.quarantined)
    hung = report(verdict="timeout", stage="device")
    out = run_on_cards(pool, ledger, 1, runner({5: hung}, []))
    assert out is hung
    attempt = out.environment.npu["attempts"][0]
    assert attempt["rule"] == "hang" and attempt["quarantined"] is True
    assert attempt["retry"].startswith("not retried: no usable NPU card among 5")
    assert json.loads((tmp_path / "cards.json").read_text())["5"]["quarantined"] is True
