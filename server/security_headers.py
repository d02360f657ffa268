"""Security headers on every response (API, dashboard, static files, errors).

The dashboard needs no third-party origin: its script and styles are served from /static, its
charts are inline SVG (style attributes, hence 'unsafe-inline' for styles only). The OpenAPI pages
(/docs, /redoc) load FastAPI's Swagger UI and ReDoc bundles from their CDN, so they get a policy
that allows that CDN and nothing else.
"""
from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")
DOCS_CDN = "https://cdn.jsdelivr.net"
DOCS_CSP = (f"default-src 'self'; script-src 'self' 'unsafe-inline' {DOCS_CDN}; "
            f"style-src 'self' 'unsafe-inline' {DOCS_CDN}; img-src 'self' data: https://fastapi.tiangolo.com; "
            f"worker-src 'self' blob:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs", "/redoc")
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

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *[(k, v) for k, v in extra if k not in present]]
            await send(message)

        await self.app(scope, receive, send_with_headers)
