"""Domain errors as HTML pages: every dashboard route renders them itself.

A route class (not an app-wide exception handler) so the API keeps its JSON errors and the
dashboard its pages, whatever order the two are installed in.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from server.errors import DomainError, Unauthorized

log = logging.getLogger(__name__)
TITLES = {400: "Bad request", 401: "Sign in needed", 403: "Not allowed", 404: "Not found", 409: "Conflict",
          413: "Upload too large", 415: "Unsupported body", 422: "Invalid input", 429: "Too many requests"}


def error_page(request: Request, status: int, detail: str) -> Response:
    from web.deps import (
        templates,  # late: templates import the filters, which import nothing of ours
    )

    return templates.TemplateResponse(request, "error.html", {
        "status": status, "title": TITLES.get(status, "Error"), "detail": detail, "viewer": False,
    }, status_code=status)


def _validation_detail(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("query", "path", "body"))
        parts.append(f"{where or 'request'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


class HtmlRoute(APIRoute):
    """Renders domain errors, bad parameters and HTTP errors as the dashboard's error page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except Unauthorized:
                if request.method == "GET":  # send the reader to sign in, then back here
                    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
                return error_page(request, 401, "Sign in with an API token to do this.")
            except DomainError as exc:
                log.info("web.domain_error path=%s status=%s detail=%s", request.url.path, exc.status_code, exc.detail)
                return error_page(request, exc.status_code, exc.detail)
            except RequestValidationError as exc:
                return error_page(request, 422, _validation_detail(exc))
            except HTTPException as exc:
                if exc.status_code == 401 and request.method == "GET":
                    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
                return error_page(request, exc.status_code, str(exc.detail))

        return route
