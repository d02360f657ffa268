"""A worker's settings, from the environment (pydantic-settings). Read through get_settings().

A worker needs only the broker and the API (BROKER_URL, API_URL, WORKER_TOKEN) plus its own
knobs; it never reads the server's settings or its database (docs/npu.md has the NPU ones).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobqueue import DEFAULT_DATA_DIR, embedded_broker_url
from runtime.evidence.calculator import default_cache_dir
from runtime.devices.host import parse_device_list


class WorkerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", case_sensitive=False)

    broker_url: str = ""  # default: the embedded SQLite broker in data_dir (a single-host install)
    api_url: str = "http://127.0.0.1:8000"
    worker_token: str = ""  # a token with the worker scope
    data_dir: Path = DEFAULT_DATA_DIR  # only for the embedded broker and the card ledger's default
    broker_poll_s: float = 0.1
    cache_dir: Path | None = None  # the graph-verify calculator cache; default: runtime's
    case_parallel: int = 1  # cases of one job run at once (mind the Celery concurrency)
    job_heartbeat_s: float = 5.0  # the server re-queues a job after STALE_JOB_S (20 s) without one
    # Kernels run this much nicer than the worker: its heartbeats go first, and the API's pages where it shares
    # the worker's scheduling group (docs/platform.md §5); 0 to run them at the worker's own priority.
    job_nice: int = 10
    # NPU workers (docs/npu.md): the cards this worker may use ("0-7", "0,1"; "" = every card it
    # finds), device-level failures in a row before a card is quarantined, and the card ledger's folder.
    npu_devices: str = ""
    npu_quarantine_after: int = 3
    npu_state_dir: Path | None = None  # default: data_dir/npu
    # Host paths no job may see besides data_dir and npu_state_dir, os.pathsep-separated (docs/SECURITY.md).
    hide_from_jobs: str = ""

    @field_validator("job_heartbeat_s", "broker_poll_s")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be positive")
        return value

    @field_validator("job_nice")
    @classmethod
    def _niceness(cls, value: int) -> int:
        if not 0 <= value <= 19:
            raise ValueError("must be 0 to 19 (a niceness added to the worker's own)")
        return value

    @field_validator("npu_devices")
    @classmethod
    def _device_list(cls, value: str) -> str:
        parse_device_list(value)  # a ValueError names the bad part
        return value.strip()

    @field_validator("npu_quarantine_after", "case_parallel")
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
    def resolved_broker_url(self) -> str:
        return self.broker_url or embedded_broker_url(self.data_dir)

    @property
    def resolved_npu_state_dir(self) -> Path:
        return (self.npu_state_dir or self.data_dir / "npu").resolve()

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir or default_cache_dir()


@lru_cache
def get_settings() -> WorkerSettings:
    return WorkerSettings()
