"""NUL in a URL's path or query is refused (400) before any route sees it.

No name the service stores can hold one (server/services/names.py), and PostgreSQL refuses NUL in
text: a lookup of `/api/v1/operators/a%00b` was a 500 there (a 404 on SQLite).
"""
from __future__ import annotations

import json
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send


class NulGuard:
    """Pure ASGI middleware: 400 for a NUL in the path or the query string."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = (scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")) + b"?" + scope.get(
                "query_string", b"")
            if b"\x00" in unquote_to_bytes(raw.replace(b"+", b" ")):
                body = json.dumps({"detail": "the URL holds a NUL character (%00): no name holds one"}).encode()
                await send({"type": "http.response.start", "status": 400, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
