"""`crosscheck api`: serve the API and the dashboard with uvicorn."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from server.commands import locate
from server.config import get_settings

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("api", help="serve the API and the dashboard")
    parser.add_argument("--host", default="127.0.0.1", help="address the API listens on")
    parser.add_argument("--port", type=int, default=8000, help="port the API listens on")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("API_WORKERS") or 1), metavar="N",
                        help="API processes (default: API_WORKERS, else 1); each serves requests and runs the "
                             "sweeper and relay, so reads are not queued behind uploads (docs/platform.md §5)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="how much the API logs")
    locate.add_data_dir_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    locate.use_data_dir(args)
    if args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    os.umask(0o077)  # the database, bundles and reports: readable by the service's uid only
    try:
        locate.open_database(get_settings())
    except locate.ServiceDataMissing as exc:
        print(locate.explain("api", exc), file=sys.stderr)
        return 1
    import uvicorn

    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT)
    uvicorn.run("server.main:create_app", factory=True, host=args.host, port=args.port, log_level=args.log_level,
                workers=args.workers)
    return 0
