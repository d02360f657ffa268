"""`crosscheck bisect ... --suite-run N --server URL`: bisect as runtime/cli/bisect.py does on this host,
then attach the first bad commit to suite run N (POST /suite-runs/N/culprits), so its page and its
webhook name the culprit (docs/bisect.md §6).

The runtime imports nothing of the client; this wrapper adds the server's flags to the runtime's
parser and talks HTTP after the bisect. Without `--suite-run` it is the runtime's command unchanged.
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
    p.add_argument("--suite-run", type=int, metavar="N",
                   help="attach the first bad commit to this suite run on --server (its page and webhook name it)")
    p.add_argument("--server", default=None, metavar="URL",
                   help="the service holding --suite-run (default: $CROSSCHECK_SERVER)")
    p.add_argument("--token", default=None, help="API token with the submit scope (default: $CROSSCHECK_TOKEN)")
    p.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    server = args.server or os.environ.get("CROSSCHECK_SERVER")
    if args.suite_run is None:
        if args.server:
            return _unusable("--server is for --suite-run N: the revisions still run on this host "
                             "(running them on the service is not built yet)")
        return bisect.bisect_command(args)
    if not server:
        return _unusable("--suite-run needs --server URL (or $CROSSCHECK_SERVER)")
    from client.api_client import Api, Refused, Unreachable
    from client.ci import token_of

    try:
        api = Api(server, token_of(args.token))
        operator = _operator_of(api, args.suite_run, args.op)
    except Refused as exc:
        return _unusable(str(exc))
    except Unreachable as exc:
        return _infra(str(exc))
    try:
        with tempfile.TemporaryDirectory(prefix="crosscheck-bisect-") as tmp:
            mine = args.json
            args.json = Path(tmp) / "bisect.json" if mine is None or str(mine) == "-" else mine
            code = bisect.bisect_command(args)
            result = json.loads(args.json.read_text()) if args.json.is_file() else {}
            if mine is not None and str(mine) == "-":
                sys.stdout.write(json.dumps(result, indent=1) + "\n")
        if code != exit_codes.OK or not result.get("first_bad_commit"):
            print(f"nothing attached to suite run {args.suite_run}: no first bad commit", file=sys.stderr)
            return code
        item = {"operator": operator, "commit": result["first_bad_commit"],
                "subject": (result.get("subject") or "")[:300], "metric": args.metric}
        api.json("POST", f"/suite-runs/{args.suite_run}/culprits", json={"items": [item]})
    except Refused as exc:
        return _unusable(f"the culprit was not attached: {exc}")
    except Unreachable as exc:
        return _infra(f"the culprit was not attached: {exc}")
    finally:
        api.close()
    print(f"culprit attached to suite run {args.suite_run}: {server.rstrip('/')}/suite-runs/{args.suite_run}")
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
