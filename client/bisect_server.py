"""`crosscheck bisect ... --server URL [--suite-run N]`: bisect as runtime/cli/bisect.py does, with the
revisions run on the service (client/bisect_remote.py), and with `--suite-run N` attach the first bad
commit to suite run N (POST /suite-runs/N/culprits), so its page and its webhook name the culprit
(docs/bisect.md §6). `--suite-run N --on-this-host` runs the revisions here and only attaches.

The runtime imports nothing of the client; this wrapper adds the server's flags to the runtime's
parser and hands the runtime's bisect a runner. Without `--server` and `--suite-run` it is the
runtime's command unchanged.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from runtime import exit_codes
from runtime.cli import bisect


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("bisect", help="find the commit that turned an operator from acceptable to kernel defect",
                       description=bisect.__doc__.split("\n\n")[0] if bisect.__doc__ else None,
                       epilog=bisect.EXIT_HELP)
    bisect.add_arguments(p)
    p.add_argument("--server", default=None, metavar="URL",
                   help="run the revisions on this service instead of this host (the same reuse); it also "
                        "holds --suite-run")
    p.add_argument("--token", default=None, help="API token with the submit scope (default: $CROSSCHECK_TOKEN)")
    p.add_argument("--suite-run", type=int, metavar="N",
                   help="attach the first bad commit to this suite run on --server, else $CROSSCHECK_SERVER "
                        "(its page and webhook name it)")
    p.add_argument("--on-this-host", action="store_true",
                   help="with --suite-run: run the revisions on this host even with --server")
    p.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    if args.on_this_host and args.suite_run is None:
        return _unusable("--on-this-host is for --suite-run N (without it, leave --server out to run here)")
    remote = bool(args.server) and not args.on_this_host
    if args.suite_run is None and not remote:
        return bisect.bisect_command(args)
    server = args.server or os.environ.get("CROSSCHECK_SERVER")
    if not server:
        return _unusable("--suite-run needs --server URL (or $CROSSCHECK_SERVER)")
    from client.api_client import Api, Refused, Unreachable
    from client.ci import token_of

    try:
        api = Api(server, token_of(args.token))
    except Refused as exc:
        return _unusable(str(exc))
    try:
        if args.suite_run is None:
            return _bisect(args, api if remote else None)
        return _bisect_and_attach(args, api, remote)
    except Refused as exc:
        return _unusable(str(exc))
    except Unreachable as exc:
        return _infra(str(exc))
    finally:
        api.close()


def _bisect(args: argparse.Namespace, api: Any | None) -> int:
    if api is None:
        return bisect.bisect_command(args)
    from client import bisect_remote

    return bisect_remote.run(args, api)


def _bisect_and_attach(args: argparse.Namespace, api: Any, remote: bool) -> int:
    from client.api_client import Refused, Unreachable

    operator = _operator_of(api, args.suite_run, args.op)  # before any revision runs
    with tempfile.TemporaryDirectory(prefix="crosscheck-bisect-") as tmp:
        mine = args.json
        args.json = Path(tmp) / "bisect.json" if mine is None or str(mine) == "-" else mine
        code = _bisect(args, api if remote else None)
        result = json.loads(args.json.read_text()) if args.json.is_file() else {}
        if mine is not None and str(mine) == "-":
            sys.stdout.write(json.dumps(result, indent=1) + "\n")
    if code != exit_codes.OK or not result.get("first_bad_commit"):
        print(f"nothing attached to suite run {args.suite_run}: no first bad commit", file=sys.stderr)
        return code
    item = {"operator": operator, "commit": result["first_bad_commit"],
            "subject": (result.get("subject") or "")[:300], "metric": args.metric}
    try:
        api.json("POST", f"/suite-runs/{args.suite_run}/culprits", json={"items": [item]})
    except Refused as exc:
        return _unusable(f"the culprit was not attached: {exc}")
    except Unreachable as exc:
        return _infra(f"the culprit was not attached: {exc}")
    print(f"culprit attached to suite run {args.suite_run}: {api.url}/suite-runs/{args.suite_run}")
    return exit_codes.OK


def _operator_of(api: Any, run_id: int, op: str) -> str:
    """The run's own name for --op (names match ignoring case and '_'), checked before any revision runs."""
    from client.api_client import Refused
    from runtime.intake.discover import key

    run = api.json("GET", f"/suite-runs/{run_id}")
    names: set[str] = set()
    cursor = None
    while True:
        page = api.json("GET", f"/suite-runs/{run_id}/results",
                        params={"limit": 1000, **({"cursor": cursor} if cursor is not None else {})})
        names |= {r["operator"] for r in page["items"]}
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    found = sorted(n for n in names if key(n) == key(op))
    if not found:
        raise Refused(f"suite run {run_id} ({run.get('suite')}) has no operator {op}")
    return found[0]


def _unusable(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return exit_codes.UNUSABLE


def _infra(message: str) -> int:
    print(f"error: infrastructure: {message}", file=sys.stderr)
    return exit_codes.INFRA
