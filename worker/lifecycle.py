"""The worker's process lifecycle, wired to Celery's signals.

- main process, before start: probe the NPU cards (runtime.devices.npu_probe); refuse the npu queue without one;
- main process, when ready: build the graph-verify calculator in the background if needed, and post
  this worker's heartbeat (capabilities, cards and their health, queues, current job) every
  JOB_HEARTBEAT_S, applying the card releases an admin asked for;
- each pool process: one API client and one warm parent (runtime.warm), kept for its lifetime.
"""
from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery import signals

from jobqueue import parse_queue
from runtime.devices.npu_probe import NpuHost
from runtime.fence.scratch import sweep_dead
from worker.capabilities import CalculatorBuild, capabilities, check_queues, check_versions, probe_npu
from worker.card_health import CardLedger
from worker.card_pool import CardPool
from worker.client import ApiClient
from worker.config import WorkerSettings, get_settings
from worker.heartbeat import Ticker
from worker.jobs import WorkerContext

log = logging.getLogger(__name__)



@dataclass
class MainProcess:
    """What the worker's main process keeps between Celery's signals."""
    hostname: str = ""
    queues: list[str] = field(default_factory=list)
    npu: NpuHost | None = None  # the start-up probe's cards (None: not an NPU worker)
    build: CalculatorBuild | None = None
    api: ApiClient | None = None
    ticker: Ticker | None = None


_ctx: WorkerContext | None = None  # this pool process's
_main_process = MainProcess()


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
    pool, ledger = npu_cards(settings)
    return WorkerContext(
        api=ApiClient(settings.api_url, settings.worker_token), name=hostname,
        cache_dir=settings.resolved_cache_dir, heartbeat_s=settings.job_heartbeat_s, cards=pool, ledger=ledger,
        parallel=max(1, settings.case_parallel), hide_paths=service_paths(settings),
        job_nice=settings.job_nice,
    )


def service_paths(settings: WorkerSettings) -> list[Path]:
    """The service's files no job may see (its mount namespace covers them, docs/SECURITY.md): the
    data dir (on a single host also the server's databases, bundles and logs), the NPU card state,
    and HIDE_FROM_JOBS (e.g. a BLOB_DIR outside the data dir)."""
    paths = [settings.data_dir.resolve(), settings.resolved_npu_state_dir]
    return paths + [Path(p).resolve() for p in settings.hide_from_jobs.split(os.pathsep) if p.strip()]


def npu_cards(settings: WorkerSettings) -> tuple[CardPool | None, CardLedger | None]:
    """This host's card pool and health ledger, when the start-up probe found usable cards.

    Both live in files under NPU_STATE_DIR, shared by the pool processes (and kept across restarts).
    """
    npu = _main_process.npu
    if npu is None or not npu.usable:
        return None, None
    state = settings.resolved_npu_state_dir
    ledger = CardLedger(state / "cards.json", settings.npu_quarantine_after)
    return CardPool(npu.usable, state, blocked=ledger.quarantined), ledger


@signals.celeryd_init.connect
def _on_celeryd_init(sender: str, options: dict[str, Any] | None = None, **_: Any) -> None:
    main = _main_process
    main.queues = _queues((options or {}).get("queues"))
    main.hostname = sender
    sweep_dead()  # job and warm dirs of workers killed mid-job on this host (runtime/fence/scratch.py)
    modes = [parse_queue(q)[0] for q in main.queues]
    check_versions(main.queues)  # raises WrongPypto (a SystemExit) for a queue of another pypto
    main.npu = probe_npu(modes, get_settings().allowed_npu_devices)
    check_queues(modes, main.npu)  # raises NoNpuHost (a SystemExit) naming what is missing
    if main.npu is not None:
        log.info("worker.npu cards=%s test_double=%s", main.npu.usable, main.npu.test_double)


@signals.worker_process_init.connect
def _on_process_init(**_: Any) -> None:
    global _ctx
    _ctx = _make_context(_main_process.hostname or socket.gethostname())
    queues = _main_process.queues or ["sim"]
    _ctx.warm(parse_queue(queues[0])[0]).prestart()  # the first queue's mode; others start with their first job


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
    build = CalculatorBuild(settings.resolved_cache_dir)
    try:
        build.ensure()
    except Exception:  # noqa: BLE001 - jobs still run; graph verify says it is unavailable
        log.exception("calculator.build_not_started")
    api = ApiClient(settings.api_url, settings.worker_token)
    name = getattr(sender, "hostname", None) or _main_process.hostname or socket.gethostname()
    queues = sorted(sender.app.amqp.queues.consume_from) if hasattr(sender, "app") else _main_process.queues

    pool, ledger = npu_cards(settings)
    # Jobs at a time: the server sends a queue no more jobs than its workers' free slots (docs/platform.md §4).
    slots = int(getattr(getattr(sender, "controller", None), "concurrency", None) or 1)

    def beat() -> None:
        caps = {**capabilities(build.state(), _main_process.npu, pool, ledger), "slots": slots}
        answer = api.worker_heartbeat({"name": name, "host": socket.gethostname(), "queues": queues,
                                       "capabilities": caps, "current_job_id": _current_job_id(),
                                       "jobs_done": _jobs_done()})
        releases = (answer or {}).get("card_releases") or {}
        if ledger is not None and releases:
            for card in ledger.apply_releases(releases):
                log.info("npu.card_released card=%s", card)

    _main_process.build, _main_process.api = build, api
    _main_process.ticker = Ticker("worker-heartbeat", settings.job_heartbeat_s, beat).start()
    log.info("worker.ready name=%s queues=%s", name, ",".join(queues))


@signals.worker_shutdown.connect
def _on_shutdown(**_: Any) -> None:
    main = _main_process
    ticker, build, api = main.ticker, main.build, main.api
    main.ticker = main.build = main.api = None
    if ticker is not None:
        ticker.stop()
    if build is not None:
        build.stop()
    if api is not None:
        api.close()
