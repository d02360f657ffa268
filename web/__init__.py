"""The dashboard: server-rendered Jinja2 pages and static assets, served by server/."""
from __future__ import annotations

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Mount the dashboard's routes and static files on the API app (filled in by the dashboard)."""
