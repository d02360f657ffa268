"""The composition root: settings, database, blobs, queue, routers, dashboard and sweeper.

Nothing is built at import: the serving process calls the factory (`uvicorn --factory
server.main:create_app`, as `crosscheck api` and `crosscheck up` do); tests call `create_app(settings)`.
"""
from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from sqlalchemy.orm import sessionmaker

import web
from server import db, docs_ui, ops
from server.api import errors as api_errors
from server.api.bounds import int64_params
from server.api.routes import api_router
from server.blobs import BlobStore
from server.config import Settings, get_settings
from server.migrate import check_schema
from server.queue import Producer
from server.schemas.submission import SubmissionCreate
from server.security_headers import SecurityHeaders
from server.body_limit import BodyLimit
from server.early_auth import EarlyAuth
from server.nul_guard import NulGuard
from server.relay import Relay
from server.sweeper import Sweeper
from server.upload_gate import UploadGate
from server.webhook_sender import WebhookSender

log = logging.getLogger(__name__)

TITLE = "PTO Crosscheck"
TAGS = [
    {"name": "submissions", "description": "Submit operator packages and scripts for verification."},
    {"name": "jobs", "description": "One submission in one mode (SIM or NPU): status, report, logs, artifacts."},
    {"name": "operators", "description": "Operators with the verdict across SIM and NPU, per case, and history."},
    {"name": "cases", "description": "Case results across jobs, with filters and cursor pagination."},
    {"name": "workers", "description": "Workers and their heartbeats."},
    {"name": "suite runs", "description": "Nightly CI: suite runs over a checkout, comparisons, reuse, webhooks."},
    {"name": "ingest", "description": "Results produced outside the queue (runtime JSON, pytest JUnit), with provenance."},
    {"name": "exports", "description": "CSV downloads of the operator, case and suite-run tables."},
    {"name": "internal", "description": "Worker-facing endpoints (scope worker)."},
    {"name": "audit", "description": "Who submitted, cancelled, retried, changed tokens or removed workers (scope admin)."},
    {"name": "operations", "description": "Health, readiness and Prometheus metrics (no token)."},
]


def create_app(settings: Settings | None = None, *, start_sweeper: bool = True) -> FastAPI:
    """Build the app; with no settings it uses the process-wide ones (and engine)."""
    own_engine = settings is not None
    settings = settings or get_settings()
    engine = db.make_engine(settings.resolved_database_url) if own_engine else db.get_engine()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        check_schema(engine, settings.resolved_database_url)  # raises SchemaOutdated: refuse to start
        sweeper = Sweeper(app.state.sessionmaker, app.state.producer, settings, settings.sweep_interval_s) if start_sweeper else None
        sender = WebhookSender(app.state.sessionmaker, settings) if start_sweeper else None
        relay = Relay(app.state.sessionmaker, app.state.producer, settings) if start_sweeper else None
        for thread in (sweeper, sender, relay):
            if thread:
                thread.start()
        log.info("api.started database=%s", engine.url.render_as_string(hide_password=True))
        # Move the ~130k objects created at import out of the collector's reach: otherwise each
        # full collection rescans them (~100 ms), which was the whole p99 of the dashboard bench.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            for thread in (sweeper, sender, relay):
                if thread:
                    thread.stop()
            app.state.producer.close()
            if own_engine:
                engine.dispose()

    app = FastAPI(title=TITLE, version="1", lifespan=lifespan, openapi_tags=TAGS,
                  dependencies=[Depends(int64_params)], docs_url=None, redoc_url=None,
                  summary="Structural and precision verification of PyPTO kernels in SIM and on the NPU")
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = sessionmaker(bind=engine, expire_on_commit=False)
    app.state.blobs = BlobStore(settings.resolved_blob_dir)
    app.state.producer = Producer(settings)
    app.state.metrics = ops.metrics_registry(app.state.sessionmaker, settings)
    api_errors.install(app)
    app.include_router(api_router())
    app.include_router(ops.router)
    docs_ui.install(app)
    web.install(app)
    app.add_middleware(UploadGate, slots=settings.upload_concurrency)  # inside BodyLimit: it counts what is spooled
    app.add_middleware(BodyLimit)
    app.add_middleware(EarlyAuth)  # outside BodyLimit: an anonymous write is answered before any byte is read
    app.add_middleware(NulGuard)
    app.add_middleware(SecurityHeaders)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated schema, plus the JSON submission body (the route parses two content types itself)."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes,
                             tags=app.openapi_tags)
        body = SubmissionCreate.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update({**body.pop("$defs", {}), "SubmissionCreate": body})
        # Our 422s carry one line like every other error (server/api/errors.py), not FastAPI's list.
        components["HTTPValidationError"] = {"title": "HTTPValidationError", "type": "object", "required": ["detail"],
                                             "properties": {"detail": {"type": "string", "title": "Detail"}}}
        components.pop("ValidationError", None)
        app.openapi_schema = schema
    return app.openapi_schema

