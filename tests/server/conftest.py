"""Server test fixtures: real databases built by running the migrations, a real broker file.

Every API test runs on SQLite and on PostgreSQL (marker `postgres`). The schema comes from
`server.migrate.upgrade` once per session; each test then starts from empty tables (truncation,
so the app's own commits are real commits: the commit-before-response test depends on that).
"""
from __future__ import annotations

import base64
import copy
import io
import json
import os
import sqlite3
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from server import migrate
from server.blobs import BlobStore
from server.config import Settings
from server.main import create_app
from server.models import ApiToken, Base, Job
from server.services import jobs, results, submissions, tokens
from tests.conftest import missing_service

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = REPO / "examples"
PG_URL = os.environ.get("CROSSCHECK_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN_KINDS = ("read", "submit", "upload", "admin", "worker")


def pg_unreachable() -> str | None:
    """Why PostgreSQL cannot be used, or None when it can."""
    engine = sa.create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://"),
                              connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        return f"PostgreSQL at {PG_URL} is unreachable ({str(exc).splitlines()[0]})"
    finally:
        engine.dispose()
    return None


class PgSchema:
    """A private schema in the test database, so concurrent runs and other suites don't collide."""

    def __init__(self, prefix: str):
        self.name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.admin = sa.create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://"))
        with self.admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{self.name}"'))
        self.url = f"{PG_URL}?options=-csearch_path%3D{self.name}"

    def drop(self) -> None:
        with self.admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{self.name}" CASCADE'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'crosscheck.db'}"
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="session")
def pg_schema() -> Iterator[PgSchema]:
    reason = pg_unreachable()
    if reason:
        missing_service(reason)
    schema = PgSchema("cc_api")
    migrate.upgrade(Settings(database_url=schema.url).resolved_database_url)
    yield schema
    schema.drop()


@pytest.fixture
def pg_fresh_schema() -> Iterator[PgSchema]:
    """An empty schema of its own (the migration tests take it up and down)."""
    reason = pg_unreachable()
    if reason:
        missing_service(reason)
    schema = PgSchema("cc_mig")
    yield schema
    schema.drop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_schema").url)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    # Jobs go to the broker at once (no fair dispatch by worker slots), so a test sees the message its request
    # sent without a worker online; tests/server/test_fair_dispatch.py and test_outbox.py turn it on.
    return Settings(database_url=database_url, data_dir=tmp_path, broker_url=f"sqla+sqlite:///{tmp_path / 'broker.db'}",
                    blob_dir=tmp_path / "blobs", max_upload_bytes=256 * 1024, fair_dispatch=False)


def truncate(engine: sa.Engine) -> None:
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        else:
            for name in tables:
                conn.execute(sa.text(f"DELETE FROM {name}"))


@pytest.fixture
def make_app(settings: Settings) -> Iterator[Callable[..., FastAPI]]:
    """create_app for a test, with the sweeper off unless asked; tables emptied afterwards."""
    made: list[FastAPI] = []

    def make(app_settings: Settings | None = None, **kwargs: Any) -> FastAPI:
        kwargs.setdefault("start_sweeper", False)
        app = create_app(app_settings or settings, **kwargs)
        made.append(app)
        return app

    yield make
    for app in made:
        app.state.engine.dispose()
    engine = sa.create_engine(settings.resolved_database_url)
    truncate(engine)
    engine.dispose()


@pytest.fixture
def app(make_app: Callable[..., FastAPI]) -> FastAPI:
    return make_app()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


def make_tokens(app: FastAPI) -> dict[str, str]:
    """A secret per scope, plus 'revoked' (a revoked submit token)."""
    secrets = {}
    with app.state.sessionmaker.begin() as session:
        for scope in TOKEN_KINDS:
            secrets[scope] = tokens.create(session, f"{scope}-bot", [scope])[1]
        revoked, secrets["revoked"] = tokens.create(session, "old-bot", ["submit"])
        tokens.revoke(session, revoked.id)
    return secrets


@pytest.fixture
def token(app: FastAPI) -> dict[str, str]:
    return make_tokens(app)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """One app and its tokens for a whole module of tests that leave little behind (the auth matrix)."""
    if request.param == "sqlite":
        url = request.getfixturevalue("sqlite_url")
    else:
        url = request.getfixturevalue("pg_schema").url
    tmp = tmp_path_factory.mktemp("shared")
    settings = Settings(database_url=url, data_dir=tmp, broker_url=f"sqla+sqlite:///{tmp / 'broker.db'}")
    app = create_app(settings, start_sweeper=False)
    with TestClient(app) as client:
        yield client, make_tokens(app)
    truncate(app.state.engine)
    app.state.engine.dispose()


@pytest.fixture
def hdr(token: dict[str, str]) -> dict[str, dict[str, str]]:
    """Authorization headers per token kind."""
    return {kind: {"Authorization": f"Bearer {secret}"} for kind, secret in token.items()}


# --- operator packages and reports -------------------------------------------------------------

def package_files(example: str = "scale_add") -> dict[str, str]:
    root = EXAMPLES / example
    return {p.name: p.read_text() for p in sorted(root.iterdir()) if p.is_file()}


def zip_package(files: dict[str, str], top: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(f"{top}/{name}" if top else name, text)
    return buf.getvalue()


@pytest.fixture
def scale_add_zip() -> bytes:
    return zip_package(package_files("scale_add"), top="scale_add")


def load_report(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture
def files_of() -> Callable[[str], dict[str, str]]:
    return package_files


@pytest.fixture
def make_zip() -> Callable[..., bytes]:
    return zip_package


@pytest.fixture
def make_npu_report() -> Callable[..., dict[str, Any]]:
    return npu_report


def npu_report(sim_report: dict[str, Any], verdicts: dict[str, str], max_abs_diff: float = 1e-4,
               aicore_time_us: float = 3.0) -> dict[str, Any]:
    """An NPU report derived from a real SIM one: the kernel wrote its output, with these verdicts."""
    report = copy.deepcopy(sim_report)
    report["mode"] = "npu"
    report["environment"]["cann"] = "8.0.RC1"
    for case in report["cases"]:
        verdict = verdicts.get(case["case"], "pass")
        case["verdict"], case["output_written"], case["graph_verify"] = verdict, True, None
        case["precision"] = {"pass": "pass", "precision_fail": "fail"}.get(verdict, "not_applicable")
        case["metrics"] = dict(case["metrics"] or {}, max_abs_diff=max_abs_diff, atol=1e-3, rtol=1e-3)
        if verdict == "pass":  # a pass agrees with its numbers (runtime.report.impossible_pass)
            case["metrics"].update(mismatch_count=0, mismatch_ratio=0.0, nan_count=0, inf_count=0,
                                   shape_match=True, dtype_match=True)
        case["cost_model"] = dict(case["cost_model"] or {}, aicore_time_us=aicore_time_us, utilization=0.5)
    return report


class Seeder:
    """Jobs with stored results, made through the services as a worker's calls would make them."""

    def __init__(self, app: FastAPI):
        self.app = app
        self.settings: Settings = app.state.settings
        self.blobs: BlobStore = app.state.blobs

    def submit(self, operator: str = "scale_add", modes: tuple[str, ...] = ("sim",),
               labels: dict[str, str] | None = None, files: dict[str, str] | None = None) -> list[int]:
        files = files or package_files("scale_add")
        with self.app.state.sessionmaker.begin() as session:
            # Seeded as the submit token's tenant when there is one (make_tokens), so it may cancel and retry.
            owner = session.scalar(sa.select(ApiToken).where(ApiToken.name == "submit-bot").limit(1))
            new = submissions.NewSubmission(filename=f"{operator}.zip", data=submissions.bundle_from_files(files),
                                            modes=list(modes), operator=operator, labels=labels or {},
                                            submitted_by=owner.name if owner else "seed",
                                            token_id=owner.id if owner else None, fresh=True)  # never a link
            _, made, _ = submissions.create(session, self.blobs, self.settings, new)
            return [j.id for j in made]

    def run(self, job_id: int, report: dict[str, Any] | None, error: str | None = None) -> None:
        with self.app.state.sessionmaker.begin() as session:
            job = session.get(Job, job_id)
            assert job is not None and jobs.claim(session, job_id, "seed-worker", job.attempts)
            session.refresh(job)
            assert results.store(session, self.blobs, job, job.attempts, report, error=error)

    def result(self, operator: str, sim: dict[str, Any] | None = None, npu: dict[str, Any] | None = None,
               labels: dict[str, str] | None = None) -> list[int]:
        modes = tuple(m for m, r in (("sim", sim), ("npu", npu)) if r is not None)
        ids = self.submit(operator, modes, labels)
        for job_id, report in zip(ids, [r for r in (sim, npu) if r is not None], strict=True):
            self.run(job_id, report)
        return ids


@pytest.fixture
def seed(app: FastAPI) -> Seeder:
    return Seeder(app)


@pytest.fixture
def sim_report() -> dict[str, Any]:
    return load_report("scale_add_sim.json")


@pytest.fixture
def broken_report() -> dict[str, Any]:
    return load_report("missing_vec_tiles_sim.json")


# --- the embedded broker -----------------------------------------------------------------------

def broker_messages(settings: Settings) -> list[dict[str, Any]]:
    """Messages in the SQLite broker: queue, task name, args, [hard, soft] time limits."""
    path = settings.resolved_broker_url.removeprefix("sqla+sqlite:///")
    if not Path(path).exists():
        return []
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT q.name, m.payload, m.visible FROM kombu_message m "
                            "JOIN kombu_queue q ON q.id = m.queue_id ORDER BY m.id").fetchall()
    out = []
    for queue, payload, visible in rows:
        message = json.loads(payload)
        args = json.loads(base64.b64decode(message["body"]))[0]
        headers = message["headers"]
        out.append({"queue": queue, "task": headers["task"], "args": args, "timelimit": headers["timelimit"],
                    "visible": bool(visible)})
    return out


@pytest.fixture
def messages(settings: Settings) -> Callable[[], list[dict[str, Any]]]:
    return lambda: broker_messages(settings)
