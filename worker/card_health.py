"""The per-card health ledger: device-level failures in a row, quarantine, and an admin's release.

One JSON file per worker, shared by its pool processes (read-modify-write under a flock), kept
across restarts: a card quarantined yesterday stays so until an admin releases it on the Workers
page. Releases come back with the heartbeat's answer, numbered, so applying one twice is harmless.
"""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_QUARANTINE_AFTER = 3  # device-level failures in a row


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _fresh() -> dict[str, Any]:
    return {"failures_in_row": 0, "failures": 0, "jobs_ok": 0, "quarantined": False, "quarantined_at": None,
            "reason": None, "last_failure": None, "release_seq": 0, "released_at": None}


class CardLedger:
    def __init__(self, path: Path, quarantine_after: int = DEFAULT_QUARANTINE_AFTER):
        if quarantine_after < 1:
            raise ValueError("quarantine_after must be at least 1")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.quarantine_after = quarantine_after

    @contextmanager
    def _edit(self) -> Iterator[dict[str, dict[str, Any]]]:
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            cards = self._read()
            yield cards
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(cards, indent=1, sort_keys=True))
            os.replace(tmp, self.path)  # readers never see half a file

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            # A damaged ledger must not make a sick card look healthy: keep it for a human, start anew.
            self.path.replace(self.path.with_suffix(".damaged"))
            return {}
        return {str(k): {**_fresh(), **v} for k, v in data.items() if isinstance(v, dict)}

    def snapshot(self) -> dict[int, dict[str, Any]]:
        return {int(k): v for k, v in self._read().items()}

    def quarantined(self) -> set[int]:
        return {card for card, row in self.snapshot().items() if row["quarantined"]}

    def record_ok(self, card: int) -> None:
        """A job ran on the card without a device-level failure: the run of failures ends."""
        with self._edit() as cards:
            row = cards.setdefault(str(card), _fresh())
            row["failures_in_row"] = 0
            row["jobs_ok"] += 1

    def record_failure(self, card: int, failure: dict[str, Any]) -> bool:
        """A device-level failure blamed on the card; True when it is now quarantined."""
        with self._edit() as cards:
            row = cards.setdefault(str(card), _fresh())
            row["failures_in_row"] += 1
            row["failures"] += 1
            row["last_failure"] = {**failure, "at": _now()}
            if not row["quarantined"] and row["failures_in_row"] >= self.quarantine_after:
                row.update(quarantined=True, quarantined_at=_now(),
                           reason=f"{row['failures_in_row']} device-level failures in a row; last: "
                                  f"{failure.get('summary', failure.get('rule', '?'))}")
            return bool(row["quarantined"])

    def apply_releases(self, releases: dict[str, int]) -> list[int]:
        """Apply an admin's releases ({card: release number}); returns the cards released now."""
        released = []
        with self._edit() as cards:
            for key, seq in releases.items():
                row = cards.setdefault(str(int(key)), _fresh())
                if int(seq) <= row["release_seq"]:
                    continue
                row["release_seq"] = int(seq)
                if row["quarantined"]:
                    row.update(quarantined=False, failures_in_row=0, released_at=_now())
                    released.append(int(key))
        return released
