"""Request bodies are size-checked while they stream in, not after they are buffered whole.

A chunked request has no Content-Length, and FastAPI reads a JSON body whole before validating it:
a 300 MiB chunked body once went into the API's memory. This middleware counts the bytes of every
body, whatever its content type, as the server receives them, and answers 413 once a body passes
the limit of its path. (Multipart bodies were once let through uncounted, since their parts spool to
disk: any route then read an 800 MiB body labelled multipart, a JSON route included.)
"""
from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.config import Settings

MAX_BODY_BYTES = 1024 * 1024  # JSON for heartbeats, claims, suite runs, sign-in forms: small
SLACK_BYTES = 64 * 1024
MAX_SIDECAR_BYTES = 16 * 1024 * 1024  # a JUnit upload's metrics sidecar, beside its XML
# A worker's result: its report (server/api/internal.py MAX_REPORT_BYTES) and its evidence tarball,
# at most 512 MiB of files (runtime/evidence/artifacts.py MAX_TOTAL_BYTES), stored compressed or not.
MAX_RESULT_BYTES = 64 * 1024 * 1024 + 512 * 1024 * 1024


def limit_for(path: str, settings: Settings) -> int:
    """The most bytes a body sent to `path` may have."""
    if path.endswith("/submissions") or path == "/submit":
        # JSON files: escaped text needs room (server/services/submission_body.py); a multipart
        # form's own framing fits in the same room.
        return 2 * settings.max_upload_bytes + SLACK_BYTES
    if path.startswith("/api/v1/ingest/"):
        return settings.max_ingest_bytes + MAX_SIDECAR_BYTES + SLACK_BYTES
    if path.startswith("/api/v1/internal/jobs/") and path.endswith("/result"):
        return MAX_RESULT_BYTES + SLACK_BYTES
    return MAX_BODY_BYTES


class BodyLimit:
    """Pure ASGI middleware: counts body bytes as they arrive; 413 past the limit."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
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
