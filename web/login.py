"""Sign in by pasting an API token (kept in an HttpOnly cookie), and sign out."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from server.api.deps import SessionDep, SettingsDep
from server.auth import TOKEN_COOKIE, refuse_cross_site
from server.services import tokens
from web.deps import render
from web.errors import HtmlRoute

router = APIRouter(route_class=HtmlRoute)
COOKIE_MAX_AGE_S = 30 * 24 * 3600


def _safe_next(target: str) -> str:
    """Only local paths: never redirect a signed-in user to another site."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"


@router.get("/login", response_class=HTMLResponse, name="login")
def login_form(request: Request, settings: SettingsDep, next: str = "/") -> HTMLResponse:
    return render(request, "login.html", None, next=_safe_next(next), anonymous_read=settings.anonymous_read)


@router.post("/login", name="login_post", response_model=None)
def login(request: Request, session: SessionDep, settings: SettingsDep,
          token: Annotated[str, Form(max_length=500)], next: Annotated[str, Form()] = "/") -> HTMLResponse | RedirectResponse:
    refuse_cross_site(request, "may not sign in (login CSRF)")
    found = tokens.verify(session, token.strip())
    if found is None:
        return render(request, "login.html", None, status_code=401, next=_safe_next(next), error="That token is not valid (unknown or revoked).",
                      anonymous_read=settings.anonymous_read)
    response = RedirectResponse(_safe_next(next), status_code=303)
    # HttpOnly: page scripts never see the secret; SameSite=Lax: other sites' forms cannot use it.
    response.set_cookie(TOKEN_COOKIE, token.strip(), max_age=COOKIE_MAX_AGE_S, httponly=True, samesite="lax",
                        secure=request.url.scheme == "https", path="/")
    return response


@router.post("/logout", name="logout")
def logout(request: Request) -> RedirectResponse:
    refuse_cross_site(request, "may not sign out")
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(TOKEN_COOKIE, path="/")
    return response
