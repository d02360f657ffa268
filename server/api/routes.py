"""Every API router under /api/v1."""
from __future__ import annotations

from fastapi import APIRouter

from server.api import audit, benchmarks, cases, exports, ingest, internal, jobs, operators, submissions, suites, workers

API_PREFIX = "/api/v1"


def api_router() -> APIRouter:
    router = APIRouter(prefix=API_PREFIX)
    for module in (submissions, jobs, operators, cases, workers, internal):
        router.include_router(module.router)
    router.include_router(suites.suites)
    router.include_router(suites.runs)
    router.include_router(ingest.router)
    router.include_router(exports.router)
    router.include_router(audit.router)
    router.include_router(benchmarks.router)
    return router
