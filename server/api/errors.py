"""Domain errors and validation errors as JSON: always {"detail": "<one line>"}."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from server.errors import DomainError, Unauthorized


def domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DomainError)
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)


def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each bad field: `query.limit: Input should be less than or equal to 500`."""
    assert isinstance(exc, RequestValidationError)
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg", "invalid")))
    return JSONResponse({"detail": "; ".join(parts) or "invalid request"}, status_code=422)


def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug or an outage, not the caller's fault: JSON like every other error (the traceback is logged)."""
    return JSONResponse({"detail": "internal server error; the server log has the details"}, status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(DomainError, domain_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, internal_error)  # Starlette still logs and re-raises it
