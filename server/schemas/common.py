"""Shared schema pieces: UTC datetimes, the error body, ORM-readable base."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]


class OrmModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class ErrorRead(BaseModel):
    """Every error answers with one human-readable line."""
    detail: str
