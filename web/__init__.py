"""The dashboard: server-rendered Jinja2 pages and static assets, served by server/.

Readable without JavaScript; web/static/app.js only enhances (local times, live progress).
"""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.responses import Response

from web.deps import HERE

API_PREFIXES = ("/api/", "/internal/", "/healthz", "/readyz", "/metrics", "/docs", "/openapi", "/redoc")


def install(app: FastAPI) -> None:
    """Mount the dashboard's routes and static files on the API app."""
    from web import audit, benchmark, coverage, jobs, login, operators, overview, submit, suites, workers
    from server.services.login_throttle import LoginThrottle
    from web.errors import error_page

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.state.login_throttle = LoginThrottle()  # failed sign-ins per address, per process
    for module in (overview, operators, coverage, jobs, submit, workers, suites, benchmark, login, audit):
        app.include_router(module.router, include_in_schema=False)

    async def not_found_page(request: Request, exc: Exception) -> Response:
        """An unknown URL typed into a browser gets the dashboard's page; API clients keep JSON."""
        assert isinstance(exc, HTTPException)
        wants_html = "text/html" in request.headers.get("accept", "")
        if exc.status_code == 404 and wants_html and not request.url.path.startswith(API_PREFIXES):
            return error_page(request, 404, f"There is no page at {request.url.path}.")
        return await http_exception_handler(request, exc)

    app.add_exception_handler(HTTPException, not_found_page)
