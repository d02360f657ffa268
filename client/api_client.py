"""The CI client's HTTP calls: retries for transient failures, and errors that say what to fix.

Refused (a 4xx: bad token, bad input) and Unreachable (no answer, or 5xx after retries) map to
distinct exit codes, so a pipeline tells "fix your call" from "the service is down".
"""
from __future__ import annotations

import time
from typing import Any

import httpx2 as httpx

RETRIES = 4  # a server restart of a few seconds is ridden out
BACKOFF_S = 1.0


class Refused(Exception):
    """The server answered 4xx: the request (or the token) is wrong."""


class Forbidden(Refused):
    """401/403: the token is missing, wrong, revoked, or lacks the scope."""


class Unreachable(Exception):
    """No usable answer from the server."""


def detail(response: httpx.Response) -> str:
    try:
        value = response.json().get("detail", response.text)
    except ValueError:
        return response.text[:500]
    return str(value)


class Api:
    def __init__(self, server: str, token: str | None, timeout_s: float = 120.0):
        self.url = server.rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise Refused(f"--server {server!r}: give the server's http(s):// URL")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # A plain-http server involves no TLS: skip loading the CA bundle (up to 0.8 s of start-up
        # on a loaded host, measured by bench/nightly.py). https keeps full verification.
        tls = self.url.startswith("https://")
        self.http = httpx.Client(base_url=self.url + "/api/v1", headers=headers, timeout=timeout_s, verify=tls)

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, tries: int = RETRIES, **kwargs: Any) -> httpx.Response:
        """The response of a 2xx; Refused on 4xx; Unreachable once retries are spent."""
        last = ""
        for attempt in range(tries):
            if attempt:
                time.sleep(BACKOFF_S * attempt)
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                last = f"cannot reach {self.url}: {exc}"
                continue
            if response.status_code >= 500:
                last = f"{method} {path}: HTTP {response.status_code}: {detail(response)}"
                continue
            if response.status_code in (401, 403):
                from client import tokens

                raise Forbidden(f"the server refused the token (HTTP {response.status_code}): {detail(response)}; "
                                f"use a token with the submit scope: {tokens.refused_hint()}")
            if response.status_code >= 400:
                raise Refused(f"{method} {path}: HTTP {response.status_code}: {detail(response)}")
            return response
        raise Unreachable(last)

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.call(method, path, **kwargs).json()
