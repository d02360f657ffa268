"""The job process's private channel to its leader: JSON lines on an inherited pipe.

Never stdout: the kernel controls stdout. Each event is one os.write, so whatever was sent
before a crash survives it.
"""
from __future__ import annotations

import json
import math
import os
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

# The encoder and the write, taken when the harness is imported: a submission that patches `json` or `os` later
# cannot rewrite what the harness tells its leader (docs/SECURITY.md).
_ENCODE = c_make_encoder(None, str, encode_basestring_ascii, None, ": ", ", ", False, False, False)
_WRITE, _JOIN = os.write, "".join


def _clean(value: Any) -> Any:
    """Make a value strict-JSON safe (NaN and inf become strings)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


class Events:
    def __init__(self, fd: int | None):
        self.fd = fd

    def emit(self, event: str, **fields: Any) -> None:
        if self.fd is None:
            return
        data = (_JOIN(_ENCODE(_clean({"event": event, **fields}), 0)) + "\n").encode()
        while data:
            written = _WRITE(self.fd, data)
            data = data[written:]


def parse(raw: bytes, max_events: int | None = None) -> list[dict[str, Any]]:
    """Decode the event stream; a torn last line (crash mid-write) is dropped.

    With max_events, stops after one more than that (so the caller can tell there were more).
    """
    events: list[dict[str, Any]] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if max_events is not None and len(events) > max_events:
            break
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and "event" in item:
            events.append(item)
    return events
