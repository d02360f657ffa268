"""A migrated temp SQLite database, seeded once per session, and the app on top of it."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from server.config import Settings
from server.migrate import upgrade
from tests.web import seed as seeding
from tests.signin import sign_in


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    data_dir.mkdir(parents=True, exist_ok=True)
    # The seeded worker stays online for the whole session however slow the machine (online means a
    # heartbeat within 3 periods): no test depends on how fast the tests before it ran.
    overrides.setdefault("job_heartbeat_s", 600)
    # These apps start no relay (make_app): jobs go to the broker at commit, as with FAIR_DISPATCH=false.
    overrides.setdefault("fair_dispatch", False)
    return Settings(data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'crosscheck.db'}", **overrides)


def make_app(settings: Settings) -> FastAPI:
    from server.main import create_app

    return create_app(settings, start_sweeper=False)


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("web-data"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = seeding.seed(session, app.state.blobs, settings)
        session.commit()
    app.state.engine.dispose()
    return settings, info


@pytest.fixture(scope="session")
def app(seeded: tuple[Settings, dict[str, Any]]) -> FastAPI:
    return make_app(seeded[0])


@pytest.fixture(scope="session")
def info(seeded: tuple[Settings, dict[str, Any]]) -> dict[str, Any]:
    return seeded[1]


@pytest.fixture
def client(app: FastAPI, info: dict[str, Any]) -> Iterator[TestClient]:
    """Signed in as a read+submit token through the dashboard's cookie."""
    with TestClient(app, follow_redirects=False) as c:
        sign_in(c, info["token"])
        yield c


@pytest.fixture
def anon(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as c:
        yield c
