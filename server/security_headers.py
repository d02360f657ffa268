"""Security headers on every response (API, dashboard, static files, errors).

The dashboard needs no third-party origin: its script and styles are served from /static, its
charts are inline SVG (style attributes, hence 'unsafe-inline' for styles only). The API's docs page
(/docs) serves its Swagger UI bundle itself (server/docs_ui.py), so it gets the same policy plus the
`blob:` workers and `data:` images Swagger UI uses.
"""
from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")
DOCS_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "worker-src 'self' blob:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs",)
INTERNAL_ERROR_BODY = b'{"detail":"internal server error; the server log has the details"}'
COMMON = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


class SecurityHeaders:
    """Pure ASGI middleware: adds the headers without buffering streamed bodies."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = DOCS_CSP if str(scope.get("path", "")).startswith(DOCS_PATHS) else CSP
        extra = [(k.encode(), v.encode()) for k, v in {**COMMON, "content-security-policy": csp}.items()]

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *[(k, v) for k, v in extra if k not in present]]
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            # Starlette answers an unhandled error outside every middleware, so its 500 would lack
            # these headers: answer it here (the same body), then let it be logged as before.
            if not started:
                body = INTERNAL_ERROR_BODY
                await send_with_headers({"type": "http.response.start", "status": 500, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send_with_headers({"type": "http.response.body", "body": body})
            raise
