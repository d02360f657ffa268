"""The real API app served in-process by uvicorn (SQLite in a temp dir, migrated), and worker
contexts that talk to it over HTTP: job functions run against the real routes, services and
database, no mocks.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
import uvicorn

from server import migrate
from server.config import Settings
from server.services import tokens
from tests.conftest import EXAMPLES
from worker.client import ApiClient
from worker.jobs import WorkerContext


@dataclass
class Api:
    client: httpx.Client  # the admin's
    url: str
    admin: str
    worker: str
    settings: Settings

    def submit(self, example: str, modes: tuple[str, ...] = ("sim",),
               cases: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        from client.submit import bundle

        filename, data = bundle(EXAMPLES / example)
        form = {"modes": list(modes), "cases": list(cases)}
        r = self.client.post("/api/v1/submissions", data=form,
                             files={"file": (filename, data)})
        assert r.status_code == 202, r.text
        return list(r.json()["jobs"])

    def get(self, path: str) -> Any:
        r = self.client.get("/api/v1" + path)
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    from server.main import create_app

    settings = Settings(data_dir=tmp_path / "data", job_heartbeat_s=0.5, case_timeout_s=120.0, case_memory_gib=8.0)
    settings.data_dir.mkdir()
    migrate.upgrade(settings.resolved_database_url)
    app = create_app(settings, start_sweeper=False)
    with app.state.sessionmaker() as session, session.begin():
        _, admin = tokens.create(session, "test admin", ["admin"])
        _, worker = tokens.create(session, "test worker", ["worker"])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the API did not start")
        thread.join(0.05)
    url = f"http://127.0.0.1:{server.config.port}"
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=30) as client:
            yield Api(client=client, url=url, admin=admin, worker=worker, settings=settings)
    finally:
        server.should_exit = True
        thread.join()


@pytest.fixture
def make_context(api: Api, calculator_cache: Path) -> Iterator[Any]:
    """Worker contexts on the in-process API; their warm parents are closed after the test."""
    made: list[WorkerContext] = []

    def make(api_client: ApiClient | None = None) -> WorkerContext:
        client = api_client or ApiClient(api.url, api.worker)
        ctx = WorkerContext(api=client, name="test-worker@host", cache_dir=calculator_cache, heartbeat_s=0.5)
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def unused_port() -> int:
    """A port nothing listens on (bound, then released)."""
    return free_port()
