"""Graph verify (issue 3): filled in next."""
from __future__ import annotations

from typing import Any


def preload(info: dict[str, Any]) -> None:
    info["graph_verify"] = "unavailable"
