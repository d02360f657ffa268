"""The worker's HTTP client for the server's internal API (contract: /api/v1/internal/...)."""
from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
REQUEST_TIMEOUT_S = 30.0
BACKOFF_CAP_S = 30.0


class ApiUnavailable(Exception):
    """Our own infrastructure failed: the API is unreachable or answered 5xx. Worth retrying."""


class ApiRejected(Exception):
    """The API refused the request (4xx other than the expected ones): a bug or a bad token."""


@dataclass
class Bundle:
    filename: str
    data: bytes


def backoff_s(attempt: int, base_s: float = 1.0, cap_s: float = BACKOFF_CAP_S) -> float:
    """Exponential backoff for the n-th retry (0-based): 1, 2, 4, ... capped."""
    return float(min(cap_s, base_s * 2 ** attempt))


class ApiClient:
    """One per process; httpx.Client is thread-safe, so the heartbeat threads share it."""

    def __init__(self, api_url: str, token: str, timeout_s: float = REQUEST_TIMEOUT_S):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=api_url.rstrip("/") + API_PREFIX, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def _request(self, method: str, path: str, retries: int = 0, ok: tuple[int, ...] = (200,),
                 **kwargs: Any) -> httpx.Response:
        """Send, retrying transport errors and 5xx `retries` times with jittered backoff.

        Our own loop rather than a library: httpx's transport retries cover only failed connects
        (not 5xx or read timeouts), and these few lines also sort the failure into ApiUnavailable
        (worth retrying) or ApiRejected (a bug or a bad token), which a generic retry decorator
        would still need written around it.

        Returns responses whose status is in `ok` (callers may list expected 4xx such as 409);
        raises ApiUnavailable or ApiRejected otherwise.
        """
        for attempt in range(retries + 1):
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                problem: str = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code in ok:
                    return response
                if response.status_code < 500:
                    raise ApiRejected(f"{method} {path}: HTTP {response.status_code}: {response.text[:500]}")
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
            if attempt < retries:
                log.warning("api.retry %s %s attempt=%d problem=%s", method, path, attempt + 1, problem)
                time.sleep(random.uniform(0.5, 1.0) * backoff_s(attempt))  # jitter: no fleet-wide lockstep
        raise ApiUnavailable(f"{method} {path}: {problem}")

    def claim(self, job_id: int, worker: str, attempt: int) -> dict[str, Any] | None:
        """The job's details, or None when it is not claimable (409: taken, cancelled, stale attempt)."""
        r = self._request("POST", f"/internal/jobs/{job_id}/claim", retries=2, ok=(200, 409),
                          json={"worker": worker, "attempt": attempt})
        if r.status_code == 409:
            return None
        body = r.json()
        return body["job"] if body.get("claimed") else None

    def bundle(self, job_id: int, retries: int = 4) -> Bundle:
        r = self._request("GET", f"/internal/jobs/{job_id}/bundle", retries=retries)
        return Bundle(filename=r.headers.get("X-Filename") or "bundle.zip", data=r.content)

    def heartbeat(self, job_id: int, attempt: int, progress: dict[str, Any] | None) -> bool:
        """Post liveness (and progress); True when the job should stop: its cancel was requested,
        or (409) this attempt is no longer the job's running one (it was re-queued or finished)."""
        body: dict[str, Any] = {"attempt": attempt}
        if progress is not None:
            body["progress"] = progress
        r = self._request("POST", f"/internal/jobs/{job_id}/heartbeat", ok=(200, 409), json=body)
        if r.status_code == 409:
            log.warning("job.attempt_gone job_id=%s attempt=%s detail=%s", job_id, attempt, r.text[:200])
            return True
        return bool(r.json().get("cancel_requested"))

    def result(self, job_id: int, attempt: int, report: dict[str, Any] | None = None, error: str | None = None,
               cancelled: bool = False, artifacts: bytes | None = None, retries: int = 8,
               timed_out: bool = False) -> bool:
        """Store the outcome (idempotent per job and attempt); True when the server stored it."""
        fields = {"attempt": str(attempt), "cancelled": "true" if cancelled else "false",
                  "timed_out": "true" if timed_out else "false"}
        if report is not None:
            fields["report"] = json.dumps(report, allow_nan=False, default=str)
        if error is not None:
            fields["error"] = error
        # Always multipart (the contract): text fields are parts without a filename.
        parts: list[tuple[str, tuple[str | None, Any, str]]] = [
            (name, (None, value.encode(), "text/plain; charset=utf-8")) for name, value in fields.items()]
        if artifacts:
            parts.append(("artifacts", ("artifacts.tar.gz", artifacts, "application/gzip")))
        r = self._request("POST", f"/internal/jobs/{job_id}/result", retries=retries, files=parts)
        return bool(r.json().get("stored"))

    def worker_heartbeat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Post the worker's heartbeat; the answer carries admin requests such as card releases."""
        answer: dict[str, Any] = self._request("POST", "/workers/heartbeat", json=body).json()
        return answer
