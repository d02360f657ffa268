"""The service's token checks as they were before the service hardening, kept on purpose.

test_service_attacks.py replays its attacks with these in place of the real checks (through
monkeypatch) and asserts the attack then works: proof that the test can fail. Never import this
from server/.
"""
from __future__ import annotations

from typing import Any

import pytest


def check_claimant(job: Any, attempt: int, token_id: int | None) -> None:
    """jobs.check_claimant before: any worker token could act for any running attempt."""


def check_binding(session: Any, worker: Any, token_id: int | None, heartbeat_s: float) -> None:
    """workers.check_binding before: a worker name was anyone's who sent a heartbeat with it."""


def unfix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the old checks where the routes look them up (the service modules' attributes)."""
    from server.services import jobs, workers

    monkeypatch.setattr(jobs, "check_claimant", check_claimant)
    monkeypatch.setattr(workers, "check_binding", check_binding)
