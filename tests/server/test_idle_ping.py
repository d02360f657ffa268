"""A pooled PostgreSQL connection is pinged only after it sat idle (server/db.py `IdlePing`).

Under load a read's connection comes back to the pool within milliseconds and goes out again without a
ping (one round trip fewer per request); one left idle is pinged, and one the server dropped meanwhile is
replaced before the request sees it. The server drops it for real (`pg_terminate_backend`).
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from server import db
from tests.server.conftest import PG_URL, pg_unreachable
from tests.conftest import missing_service

pytestmark = pytest.mark.postgres


@pytest.fixture
def engine() -> Iterator[sa.Engine]:
    reason = pg_unreachable()
    if reason:
        missing_service(reason)
    made = db.make_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://"))
    yield made
    made.dispose()


def backend_pid(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


def terminate(pid: int) -> None:
    admin = sa.create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://"), poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
    admin.dispose()
    time.sleep(0.2)  # the backend exits


def pinger(engine: sa.Engine) -> db.IdlePing:
    found = db.IdlePing.of(engine)
    assert found is not None
    return found


def test_a_connection_back_within_the_idle_time_goes_out_unpinged(engine: sa.Engine) -> None:
    first = backend_pid(engine)
    pings = pinger(engine).pings
    for _ in range(5):
        assert backend_pid(engine) == first  # the same pooled connection each time
    assert pinger(engine).pings == pings  # and no ping for it


def test_an_idle_connection_the_server_dropped_is_replaced_before_use(engine: sa.Engine,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.3)
    dropped = backend_pid(engine)
    terminate(dropped)
    time.sleep(0.4)  # idle longer than PING_AFTER_IDLE_S
    pings = pinger(engine).pings
    assert backend_pid(engine) != dropped  # the ping failed, the pool connected anew: no error reached us
    assert pinger(engine).pings == pings + 1


def test_a_connection_dropped_within_the_idle_time_fails_once_then_the_pool_recovers(engine: sa.Engine) -> None:
    """The price of skipping the ping, bounded: one request, and only if the server dropped the
    connection in the PING_AFTER_IDLE_S since its last use; the pool is invalidated with it."""
    terminate(backend_pid(engine))
    with pytest.raises(sa.exc.OperationalError):
        backend_pid(engine)
    assert backend_pid(engine) > 0
