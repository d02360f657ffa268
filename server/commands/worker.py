"""`crosscheck worker`: start a Celery worker for the sim and/or npu queue.

A worker consumes the queues of its own pypto version (`sim@0.2.0`), and the plain mode queues only with
the reference pypto (docs/versions.md §3): a worker with a pypto built from source takes only the jobs
that ask for that version.

The server package never imports worker modules: the worker runs as `python -m celery -A
worker.app worker` in a child process, configured through the environment (server.config).
"""
from __future__ import annotations

import argparse
import os
import sys

from jobqueue import QUEUES, worker_queues
from server.commands import child_processes, datadir, locate, worker_name


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("worker", help="run a worker that verifies queued jobs")
    p.add_argument("--queue", action="append", choices=QUEUES, default=[],
                   help="queue to consume (repeatable; default: sim)")
    p.add_argument("--queues", default=None, metavar="LIST", help="the same as a comma list, e.g. sim,npu")
    p.add_argument("--devices", default=None, metavar="IDS",
                   help="NPU cards this worker may use, e.g. 0-7 or 0,1 (sets NPU_DEVICES; default: all)")
    p.add_argument("--concurrency", type=int, default=None, metavar="N",
                   help="jobs at a time, one warm parent each (default: 1; an npu worker: one per card)")
    p.add_argument("--name", default=None, metavar="NAME",
                   help="worker name (default: <queues>@<host>, or <queues>-2@<host>, ... when that one runs)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                   help="how much the worker logs")
    locate.add_data_dir_argument(p)
    p.set_defaults(func=run)


def celery_command(queues: list[str], concurrency: int = 1, name: str | None = None,
                   loglevel: str = "INFO", quiet: bool = False) -> list[str]:
    """The worker's command line. Gossip, mingle and the event heartbeat are broadcast features the
    embedded SQLite broker does not serve; the worker posts its own heartbeat to the API instead.
    `quiet` drops Celery's start-up banner (`crosscheck up` without --verbose)."""
    modes = dict.fromkeys(q.partition("@")[0] for q in queues)  # versioned queues: "sim@0.2.0"
    node = name or f"{'+'.join(modes)}@%h"
    if "@" not in node:
        node += "@%h"
    return [sys.executable, "-m", "celery", "-A", "worker.app", *(["--quiet"] if quiet else []), "worker",
            "--loglevel", loglevel,
            "-Q", ",".join(queues), "--concurrency", str(concurrency), "--hostname", node, "--pool", "prefork",
            "--without-gossip", "--without-mingle", "--without-heartbeat"]


def worker_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: a token from tokens.json when WORKER_TOKEN is unset (local setups)."""
    env = dict(os.environ if env is None else env)
    if not env.get("WORKER_TOKEN"):
        token = datadir.read_tokens(datadir.data_dir_from_env(env)).get("worker")
        if token:
            env["WORKER_TOKEN"] = token
    return env


def missing_service_data(env: dict[str, str]) -> str | None:
    """What a worker lacks to start (its token, the embedded broker's file), saying where it looked."""
    data_dir = datadir.data_dir_from_env(env).resolve()
    where = locate.data_dir_source("--data-dir or DATA_DIR")
    if not env.get("WORKER_TOKEN"):
        return (f"no worker token: WORKER_TOKEN is unset and there is no {data_dir / datadir.TOKENS_FILE}\n"
                f"(looked in {where}).\nRun this where `crosscheck up` was started or pass --data-dir DIR (a local "
                "service), or set WORKER_TOKEN (`crosscheck token create NAME --scope worker`), API_URL and "
                "BROKER_URL (a production service).")
    if not env.get("BROKER_URL") and not data_dir.is_dir():
        return (f"no broker: BROKER_URL is unset and there is no data dir for the embedded broker at {data_dir}\n"
                f"(looked in {where}).\n"
                "Run this where `crosscheck up` was started, pass --data-dir DIR, or set BROKER_URL "
                "(redis://...).")
    return None


def npu_refusal(queues: list[str]) -> str | None:
    """Why this host cannot consume the npu queue, or None."""
    if "npu" not in queues:
        return None
    from runtime.errors import NO_NPU_MESSAGE
    from runtime.devices.host import npu_status

    available, why = npu_status()
    return None if available else f"{NO_NPU_MESSAGE} ({why})"


def parse_queues(repeated: list[str], listed: str | None) -> list[str]:
    """--queue (repeatable) and --queues (a comma list) together; ValueError names an unknown queue."""
    queues = [*repeated, *[q.strip() for q in (listed or "").split(",") if q.strip()]]
    unknown = [q for q in queues if q not in QUEUES]
    if unknown:
        raise ValueError(f"unknown queue(s) {', '.join(unknown)}; use sim and/or npu")
    return list(dict.fromkeys(queues or ["sim"]))


def default_concurrency(queues: list[str], devices: list[int] | None) -> int:
    """One job per NPU card (the cards named, else the /dev/davinci nodes), else 1."""
    if "npu" not in queues:
        return 1
    from runtime.devices.host import npu_devices

    found = npu_devices()
    cards = [d for d in found if devices is None or d in devices]
    return max(1, len(cards))


def run(args: argparse.Namespace) -> int:
    from runtime.devices.host import parse_device_list

    locate.use_data_dir(args)

    try:
        queues = parse_queues(args.queue, args.queues)
        devices = parse_device_list(args.devices) if args.devices is not None else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if devices is not None and "npu" not in queues:
        print("error: --devices is for npu workers (add --queues npu)", file=sys.stderr)
        return 2
    refusal = npu_refusal(queues)
    if refusal:
        print(f"error: cannot start an npu worker: {refusal}", file=sys.stderr)
        return 2
    concurrency = args.concurrency if args.concurrency is not None else default_concurrency(queues, devices)
    if concurrency < 1:
        print("error: --concurrency must be at least 1", file=sys.stderr)
        return 2
    env = worker_environment()
    if devices is not None:
        env["NPU_DEVICES"] = ",".join(map(str, devices))
    missing = missing_service_data(env)
    if missing:
        print(locate.explain("worker", missing), file=sys.stderr)
        return 2
    # A session of its own: a terminal's Ctrl-C reaches Celery once, through us, not twice.
    from runtime.devices.pypto_api import installed_version

    consumed = worker_queues(queues, installed_version())
    try:
        node, lock = worker_name.claim(queues, args.name)
    except worker_name.NameTaken as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"worker {node} consuming {', '.join(consumed)} (pypto {installed_version() or 'not installed'})",
          file=sys.stderr)
    # The lock goes with the worker: the name stays taken while Celery runs, even if this process dies.
    with lock:
        proc = child_processes.start(celery_command(consumed, concurrency, node, args.log_level.upper()), env,
                                     pass_fds=(lock.fileno(),))
        return child_processes.wait_forwarding_signals(proc)
