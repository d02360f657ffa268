"""The request session commits BEFORE the response goes out, and after-commit actions follow it.

Since FastAPI 0.118 a `yield` dependency's teardown runs after the response is sent; a commit there
could fail behind a 200. These tests add routes to a real app and break a real commit.
"""
from __future__ import annotations

import sqlalchemy as sa
from fastapi.testclient import TestClient

from server.api.deps import SessionDep, after_commit
from server.errors import NotFound
from server.models import ApiToken
from server.services import tokens

CALLER = "session-test-caller"


def _token(name: str, digest: str) -> ApiToken:
    return ApiToken(name=name, prefix="cc_test", token_hash=digest, scopes="read")


def _caller(app) -> dict[str, str]:
    """A write needs a valid token before its body is read (server/early_auth.py)."""
    with app.state.sessionmaker.begin() as session:
        return {"Authorization": f"Bearer {tokens.create(session, CALLER, ['read'])[1]}"}


def _names(settings) -> list[str]:
    engine = sa.create_engine(settings.resolved_database_url)  # another connection: sees only committed rows
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.select(ApiToken.name).where(ApiToken.name != CALLER)
                                     .order_by(ApiToken.name)).scalars())
    finally:
        engine.dispose()


def test_a_failed_commit_is_an_error_response_not_a_200(make_app, settings):
    app, ran = make_app(), []

    @app.post("/test/duplicate-tokens")
    def duplicate(session: SessionDep) -> dict[str, bool]:
        # Two rows with one token_hash: nothing fails until the commit flushes them.
        session.add_all([_token("dup-1", "0" * 64), _token("dup-2", "0" * 64)])
        after_commit(session, lambda: ran.append("after"))
        return {"ok": True}

    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.post("/test/duplicate-tokens", headers=_caller(app))
    assert r.status_code == 500
    assert r.json() == {"detail": "internal server error; the server log has the details"}
    assert _names(settings) == [] and ran == []


def test_a_commit_happens_before_the_response_and_after_commit_actions_see_it(make_app, settings):
    app, seen = make_app(), []

    @app.post("/test/token")
    def create(session: SessionDep) -> dict[str, bool]:
        session.add(_token("fresh", "1" * 64))
        after_commit(session, lambda: seen.append(_names(settings)))
        return {"ok": True}

    with TestClient(app) as client:
        assert client.post("/test/token", headers=_caller(app)).json() == {"ok": True}
    assert seen == [["fresh"]]  # committed before the action ran, and the action ran before the response


def test_a_domain_error_rolls_back(make_app, settings):
    app, ran = make_app(), []

    @app.post("/test/half-done")
    def half_done(session: SessionDep) -> dict[str, bool]:
        session.add(_token("half", "2" * 64))
        session.flush()
        after_commit(session, lambda: ran.append("after"))
        raise NotFound("no such thing")

    with TestClient(app) as client:
        r = client.post("/test/half-done", headers=_caller(app))
    assert (r.status_code, r.json()) == (404, {"detail": "no such thing"})
    assert _names(settings) == [] and ran == []
