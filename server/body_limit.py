"""Request bodies are size-checked while they stream in, not after they are buffered whole.

A chunked request has no Content-Length, and FastAPI reads a JSON body whole before validating it:
a 300 MiB chunked body once went into the API's memory. This middleware counts the bytes of every
body that is not multipart (multipart parts spool to disk under their own per-part limits) as the
server receives them, and answers 413 once a body passes the limit of its path.
"""
from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.config import Settings

MAX_BODY_BYTES = 1024 * 1024  # JSON for heartbeats, claims, suite runs: small
SLACK_BYTES = 64 * 1024


def limit_for(path: str, settings: Settings) -> int:
    """The most bytes a body sent to `path` may have."""
    if path.endswith("/submissions"):  # JSON files: escaped text needs room (server/services/submission_body.py)
        return 2 * settings.max_upload_bytes + SLACK_BYTES
    if path.startswith("/api/v1/ingest/"):
        return settings.max_ingest_bytes + SLACK_BYTES
    return MAX_BODY_BYTES


class BodyLimit:
    """Pure ASGI middleware: counts body bytes as they arrive; 413 past the limit."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        if scope["type"] != "http" or headers.get(b"content-type", b"").lower().startswith(b"multipart/"):
            await self.app(scope, receive, send)
            return
        limit = limit_for(scope.get("path", ""), scope["app"].state.settings)
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # An HTTPException passes FastAPI's body parsing unchanged (other errors become 400s).
                    raise HTTPException(413, f"the request body is over {limit} bytes (counted as it arrived)")
            return message

        await self.app(scope, counted, send)
