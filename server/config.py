"""Settings, from the environment (pydantic-settings). Read through get_settings()."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobqueue import DEFAULT_DATA_DIR, embedded_broker_url
from runtime.host import parse_device_list


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False)

    data_dir: Path = DEFAULT_DATA_DIR
    database_url: str = ""  # default: SQLite in data_dir
    broker_url: str = ""  # default: the embedded SQLite broker in data_dir
    blob_dir: Path | None = None  # default: data_dir/blobs
    api_url: str = "http://127.0.0.1:8000"  # what workers call
    worker_token: str = ""  # a token with the worker scope (remote workers)
    anonymous_read: bool = False
    cache_dir: Path | None = None  # the graph-verify calculator cache
    case_timeout_s: float = 300.0
    case_memory_gib: float = 8.0
    case_parallel: int = 1  # cases of one job run at once by a worker (mind the Celery concurrency)
    max_upload_bytes: int = 20 * 1024 * 1024
    job_heartbeat_s: float = 10.0
    stale_job_s: float = 120.0  # a running job without heartbeat this long is re-queued
    max_attempts: int = 3
    broker_poll_s: float = 0.1
    max_ingest_bytes: int = 64 * 1024 * 1024  # one uploaded report or JUnit file (docs/ci.md)
    webhook_backoff_s: float = 30.0  # first retry delay; doubles per failed attempt
    webhook_max_attempts: int = 6
    webhook_timeout_s: float = 10.0
    public_url: str = ""  # how people reach the dashboard (links in webhooks and the CLI); default: as called
    # NPU workers (docs/npu.md): the cards a worker may use ("0-7", "0,1"; "" = every card it finds),
    # device-level failures in a row before a card is quarantined, and where the card ledger lives.
    npu_devices: str = ""
    npu_quarantine_after: int = 3
    npu_state_dir: Path | None = None  # default: data_dir/npu
    # An NPU job waits as awaiting_npu while no NPU worker is online, and expires after this long.
    npu_wait_s: float = 24 * 3600.0
    # `crosscheck db compact` keeps every case result this many days, then thins them (docs/history.md).
    retention_days: int = 180

    @field_validator("case_timeout_s", "case_memory_gib", "job_heartbeat_s", "stale_job_s", "npu_wait_s")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be positive")
        return value

    @field_validator("npu_devices")
    @classmethod
    def _device_list(cls, value: str) -> str:
        parse_device_list(value)  # a ValueError names the bad part
        return value.strip()

    @field_validator("npu_quarantine_after", "retention_days")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be at least 1")
        return value

    @property
    def allowed_npu_devices(self) -> list[int] | None:
        """NPU_DEVICES as card ids, or None for every card the worker finds."""
        return parse_device_list(self.npu_devices) if self.npu_devices else None

    @property
    def resolved_npu_state_dir(self) -> Path:
        return (self.npu_state_dir or self.data_dir / "npu").resolve()

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            url = self.database_url
            if url.startswith("postgresql://"):
                url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
            return url
        return f"sqlite:///{(self.data_dir / 'crosscheck.db').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        return self.broker_url or embedded_broker_url(self.data_dir)

    @property
    def resolved_blob_dir(self) -> Path:
        return (self.blob_dir or self.data_dir / "blobs").resolve()

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
