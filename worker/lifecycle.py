"""The worker's process lifecycle, wired to Celery's signals.

- main process, before start: refuse the npu queue on a host without an NPU;
- main process, when ready: build the graph-verify calculator in the background if needed, and post
  this worker's heartbeat (capabilities, queues, current job) every JOB_HEARTBEAT_S;
- each pool process: one API client and one warm parent (runtime.warm), kept for its lifetime.
"""
from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

from celery import signals

from runtime.cli import default_cache_dir
from server.config import Settings, get_settings
from worker.capabilities import CalculatorBuild, capabilities, check_queues, device_id
from worker.client import ApiClient
from worker.heartbeat import Ticker
from worker.jobs import WorkerContext

log = logging.getLogger(__name__)

_ctx: WorkerContext | None = None  # this pool process's
_main: dict[str, Any] = {}  # the main process's ticker and calculator build


def cache_dir(settings: Settings) -> Path:
    return Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()


def _queues(option: Any) -> list[str]:
    if not option:
        return []
    items = option.split(",") if isinstance(option, str) else list(option)
    return [q.strip() for q in items if q and q.strip()]


def job_context(hostname: str) -> WorkerContext:
    """This process's context, made at pool-process init (or at the first job with `--pool solo`)."""
    global _ctx
    if _ctx is None:
        _ctx = _make_context(hostname)
    elif _ctx.name != hostname and hostname:
        _ctx.name = hostname
    return _ctx


def _make_context(hostname: str) -> WorkerContext:
    settings = get_settings()
    return WorkerContext(
        api=ApiClient(settings.api_url, settings.worker_token), name=hostname,
        cache_dir=cache_dir(settings), heartbeat_s=settings.job_heartbeat_s, device_id=device_id(),
        parallel=max(1, settings.case_parallel),
    )


@signals.celeryd_init.connect
def _on_celeryd_init(sender: str, options: dict[str, Any] | None = None, **_: Any) -> None:
    queues = _queues((options or {}).get("queues"))
    _main["queues"] = queues
    _main["hostname"] = sender
    check_queues(queues)  # raises NoNpuHost (a SystemExit) with the runtime's message


@signals.worker_process_init.connect
def _on_process_init(**_: Any) -> None:
    global _ctx
    _ctx = _make_context(_main.get("hostname") or socket.gethostname())
    queues = _main.get("queues") or ["sim"]
    _ctx.warm(queues[0]).prestart()  # the first queue's mode; others start with their first job


@signals.worker_process_shutdown.connect
def _on_process_shutdown(**_: Any) -> None:
    if _ctx is not None:
        _ctx.close()


def _current_job_id() -> int | None:
    from celery.worker import state

    ids = []
    for request in list(state.active_requests):
        try:
            ids.append(int(request.args[0]))
        except (AttributeError, IndexError, TypeError, ValueError):
            continue
    return min(ids) if ids else None


def _jobs_done() -> int:
    from celery.worker import state

    return int(sum(state.total_count.values()))


@signals.worker_ready.connect
def _on_ready(sender: Any, **_: Any) -> None:
    settings = get_settings()
    build = CalculatorBuild(cache_dir(settings))
    try:
        build.ensure()
    except Exception:  # noqa: BLE001 - jobs still run; graph verify says it is unavailable
        log.exception("calculator.build_not_started")
    api = ApiClient(settings.api_url, settings.worker_token)
    name = getattr(sender, "hostname", None) or _main.get("hostname") or socket.gethostname()
    queues = sorted(sender.app.amqp.queues.consume_from) if hasattr(sender, "app") else _main.get("queues", [])

    def beat() -> None:
        api.worker_heartbeat({"name": name, "host": socket.gethostname(), "queues": queues,
                              "capabilities": capabilities(build.state()), "current_job_id": _current_job_id(),
                              "jobs_done": _jobs_done()})

    _main.update(build=build, api=api, ticker=Ticker("worker-heartbeat", settings.job_heartbeat_s, beat).start())
    log.info("worker.ready name=%s queues=%s", name, ",".join(queues))


@signals.worker_shutdown.connect
def _on_shutdown(**_: Any) -> None:
    ticker, build, api = _main.pop("ticker", None), _main.pop("build", None), _main.pop("api", None)
    if ticker is not None:
        ticker.stop()
    if build is not None:
        build.stop()
    if api is not None:
        api.close()
