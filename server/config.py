"""The server's settings (API, dashboard, CLI), from the environment (pydantic-settings). Read through
get_settings(). A worker has its own (worker/config.py)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobqueue import DEFAULT_DATA_DIR, embedded_broker_url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False)

    data_dir: Path = DEFAULT_DATA_DIR
    database_url: str = ""  # default: SQLite in data_dir
    broker_url: str = ""  # default: the embedded SQLite broker in data_dir
    blob_dir: Path | None = None  # default: data_dir/blobs
    anonymous_read: bool = False
    case_timeout_s: float = 300.0
    case_memory_gib: float | None = None  # unset: half of each worker host's memory (runtime/fence/host_memory.py)
    max_upload_bytes: int = 20 * 1024 * 1024
    # A killed worker's job runs again within stale_job_s + sweep_interval_s of its last heartbeat (docs/platform.md §3).
    job_heartbeat_s: float = 5.0
    stale_job_s: float = 20.0  # a running job without heartbeat this long is re-queued
    sweep_interval_s: float = 5.0  # how often the API looks for lost jobs and messages (server/sweeper.py)
    max_attempts: int = 3
    # Jobs wait in the database until a worker slot of their queue is free, interactive first, then round-robin
    # over tokens (docs/platform.md §4); off: every job goes to the broker at once, first come first served.
    fair_dispatch: bool = True
    dispatch_hold_s: float = 30.0  # a job sent and not yet claimed holds its slot this long
    broker_poll_s: float = 0.1
    max_ingest_bytes: int = 64 * 1024 * 1024  # one uploaded report or JUnit file (docs/ci.md)
    upload_concurrency: int = 1  # received uploads one API process checks at a time (server/upload_gate.py)
    webhook_backoff_s: float = 30.0  # first retry delay; doubles per failed attempt
    webhook_max_attempts: int = 6
    webhook_timeout_s: float = 10.0
    webhook_allow_loopback: bool = False  # a receiver on this host (server/services/webhook_targets.py)
    public_url: str = ""  # how people reach the dashboard (links in webhooks and the CLI); default: as called
    # An NPU job waits as awaiting_npu while no NPU worker is online, and expires after this long.
    npu_wait_s: float = 24 * 3600.0
    # Bounded work (docs/SECURITY.md): refused up front with a 4xx naming the setting.
    max_cases_per_submission: int = 1000
    max_job_s: float = 24 * 3600.0  # a job's whole time limit (its cases' timeouts plus overhead)
    max_queued_cases_per_token: int = 5000  # cases of one token's jobs waiting or running, all modes
    # `crosscheck db compact` keeps every case result this many days, then thins them (docs/history.md).
    retention_days: int = 180

    @field_validator("case_timeout_s", "case_memory_gib", "job_heartbeat_s", "stale_job_s", "npu_wait_s",
                     "max_job_s")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be positive")
        return value

    @field_validator("retention_days", "max_cases_per_submission", "max_queued_cases_per_token",
                     "upload_concurrency")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be at least 1")
        return value

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
