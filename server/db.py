"""Engine and sessions. One place commits per unit of work."""
from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.orm import Session, sessionmaker

from server.config import get_settings

PING_AFTER_IDLE_S = 2.0  # a connection back in the pool for less than this is used without a ping
RETURNED_AT = "crosscheck_returned_at"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")  # readers don't block the writer
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    engine = create_engine(url, pool_size=10, max_overflow=20)
    IdlePing(engine)
    return engine


class IdlePing:
    """A pooled connection is pinged before use only when it has been idle PING_AFTER_IDLE_S or longer.

    SQLAlchemy's pre_ping asks the server before every checkout: one round trip of the five to seven a read
    makes, paid again under load when connections come back within milliseconds (docs/platform.md §5). A
    connection idle for a while, the one a database restart leaves dead, is still checked and replaced."""

    _of: weakref.WeakKeyDictionary[Engine, IdlePing] = weakref.WeakKeyDictionary()

    def __init__(self, engine: Engine):
        self.engine, self.pings = engine, 0  # pings: how many checkouts asked the server
        IdlePing._of[engine] = self
        event.listen(engine, "checkin", self._checkin)
        event.listen(engine, "checkout", self._checkout)

    @classmethod
    def of(cls, engine: Engine) -> IdlePing | None:
        return cls._of.get(engine)

    @staticmethod
    def _checkin(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        record.info[RETURNED_AT] = time.monotonic()

    def _checkout(self, dbapi_conn: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        returned = record.info.get(RETURNED_AT)  # none on a connection just made (info goes with the connection)
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE_S:
            return
        self.pings += 1
        try:
            self.engine.dialect.do_ping(dbapi_conn)
        except Exception as error:  # noqa: BLE001 - any failed ping: the pool drops it and connects anew
            raise exc.DisconnectionError(f"the pooled connection is gone: {error}") from error


@lru_cache
def get_engine() -> Engine:
    return make_engine(get_settings().resolved_database_url)


@lru_cache
def get_sessionmaker() -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(), expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session] | None = None) -> Iterator[Session]:
    """A unit of work: commit on success, roll back on error, always close."""
    session = (factory or get_sessionmaker())()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def reset_caches() -> None:
    """Forget the engine (tests, and after settings change)."""
    if get_engine.cache_info().currsize:
        get_engine().dispose()
    get_engine.cache_clear()
    get_sessionmaker.cache_clear()
