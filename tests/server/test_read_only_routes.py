"""The routes marked `read_only` (server/api/deps.py) run their statements in autocommit: no BEGIN and COMMIT
round trips around a read (docs/platform.md §5). Asked of the driver's connection itself, statement by
statement; a route not marked still reads and writes in one transaction, and a read-only route still records
its token's first use."""
from __future__ import annotations

import sqlalchemy as sa

from server.models import ApiToken
from server.services import tokens


def _autocommit(dbapi_conn) -> bool:
    if type(dbapi_conn).__module__.startswith("psycopg"):
        return bool(dbapi_conn.autocommit)
    return dbapi_conn.isolation_level is None  # sqlite3: None is autocommit


def _modes(app, client, url: str, headers) -> list[bool]:
    """Whether each statement the request sent ran outside a transaction."""
    seen: list[bool] = []

    def capture(_conn, cursor, *_args) -> None:
        seen.append(_autocommit(cursor.connection))

    sa.event.listen(app.state.engine, "before_cursor_execute", capture)
    try:
        response = client.get(url, headers=headers)
    finally:
        sa.event.remove(app.state.engine, "before_cursor_execute", capture)
    assert response.status_code == 200, (url, response.text[:300])
    return seen


def test_read_routes_send_no_transaction_and_the_others_do(client, hdr, seed, sim_report, app):
    job_id = seed.result("scale_add", sim=sim_report)[0]
    queued = seed.submit("scale_add")[0]
    client.get("/api/v1/jobs", headers=hdr["read"])  # the token's use is written at most once a minute
    for url in ("/api/v1/jobs", "/api/v1/jobs?limit=1", f"/api/v1/jobs/{job_id}", f"/api/v1/jobs/{queued}",
                "/api/v1/operators", "/api/v1/operators/scale_add", "/api/v1/cases"):
        modes = _modes(app, client, url, hdr["read"])
        assert modes and all(modes), (url, modes)
    with app.state.sessionmaker() as session:
        submission_id = session.scalar(sa.text("SELECT submission_id FROM jobs WHERE id = :j"), {"j": job_id})
    modes = _modes(app, client, f"/api/v1/submissions/{submission_id}", hdr["read"])
    assert modes and not any(modes), modes  # not marked: one transaction, as before


def test_a_read_only_route_still_records_its_tokens_first_use(client, app):
    with app.state.sessionmaker.begin() as session:
        token, secret = tokens.create(session, "fresh-reader", ["read"])
        token_id = token.id
    modes = _modes(app, client, "/api/v1/jobs", {"Authorization": f"Bearer {secret}"})
    assert all(modes)
    with app.state.sessionmaker() as session:
        assert session.get(ApiToken, token_id).last_used_at is not None
