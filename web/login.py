"""Sign in by pasting an API token (the cookie gets a session id of its own, never the token), and sign out."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Cookie, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from server.api.deps import SessionDep, SettingsDep
from server.auth import SESSION_COOKIE, refuse_cross_site
from server.errors import QuotaExceeded
from server.services import audit, tokens, web_sessions
from server.services.login_throttle import LoginThrottle
from web.deps import render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)


def _safe_next(target: str) -> str:
    """Only local paths: never redirect a signed-in user to another site."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


def throttle(request: Request) -> LoginThrottle:
    return request.app.state.login_throttle  # type: ignore[no-any-return]


@router.get("/login", response_class=HTMLResponse, name="login")
def login_form(request: Request, settings: SettingsDep, next: str = "/") -> HTMLResponse:
    return render(request, "login.html", None, next=_safe_next(next), anonymous_read=settings.anonymous_read)


@router.post("/login", name="login_post", response_model=None)
def login(request: Request, session: SessionDep, settings: SettingsDep,
          token: Annotated[str, Form(max_length=500)], next: Annotated[str, Form()] = "/") -> HTMLResponse | RedirectResponse:
    """Only application/x-www-form-urlencoded reaches here (server/early_auth.py refuses other bodies)."""
    refuse_cross_site(request, "may not sign in (login CSRF)")
    address = request.client.host if request.client else "unknown"
    wait = throttle(request).wait_s(address)
    if wait:
        raise QuotaExceeded(f"too many failed sign-ins from {address}: try again in {wait:.0f} s")
    found = tokens.verify(session, token.strip())
    if found is None:
        throttle(request).failed(address)
        audit.record(session, "anonymous", audit.LOGIN_FAILED, f"from {address}"[:200])
        return render(request, "login.html", None, status_code=401, next=_safe_next(next), error="That token is not valid (unknown or revoked).",
                      anonymous_read=settings.anonymous_read)
    throttle(request).succeeded(address)
    response = RedirectResponse(_safe_next(next), status_code=303)
    # HttpOnly: page scripts never see it; SameSite=Lax: other sites' forms cannot use it.
    response.set_cookie(SESSION_COOKIE, web_sessions.start(session, found), max_age=web_sessions.SESSION_MAX_AGE_S,
                        httponly=True, samesite="lax", secure=request.url.scheme == "https", path="/")
    return response


@router.post("/logout", name="logout")
def logout(request: Request, session: SessionDep,
           cookie: Annotated[str | None, Cookie(alias=SESSION_COOKIE)] = None) -> RedirectResponse:
    refuse_cross_site(request, "may not sign out")
    if cookie:
        web_sessions.end(session, cookie.strip())
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
