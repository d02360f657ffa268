"""`crosscheck upload FILE...`: results produced outside the queue, into a suite run.

A .json file is a runtime report (`crosscheck run --mode npu --json`); a .xml file is pytest's
--junitxml output (NPU results), with an optional --metrics sidecar. The same --run-key and
--attempt make a retried upload store nothing twice. Exit codes as `crosscheck ci run`: 0 stored,
2 refused (bad file, token or options), 3 server unreachable.
"""
from __future__ import annotations

import argparse
import os
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from client import tokens
from client.api_client import Api
from client.ci import DEFAULT_SERVER, EXIT_OK, Unusable, labels_of, token_of, with_exit_codes

MAX_FILE_BYTES = 256 * 1024 * 1024  # the server has its own, usually smaller, limit


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("upload", help="store results run outside the queue (runtime JSON or pytest JUnit)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", type=Path, nargs="+", metavar="FILE", help="report.json or junit.xml (several allowed)")
    p.add_argument("--suite", required=True, help="the suite run's suite")
    p.add_argument("--run-key", default=None, metavar="KEY",
                   help="the pipeline's id: the same key is the same suite run (default: a new run)")
    p.add_argument("--attempt", type=int, default=1, help="the pipeline's re-run number (default 1)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="commit=..., branch=..., pipeline=URL, ... (repeatable)")
    p.add_argument("--metrics", type=Path, default=None, metavar="FILE",
                   help="JUnit only: JSON sidecar with the environment fingerprint and per-test diffs")
    p.add_argument("--operator", default=None, help="JUnit only: the operator of every testcase")
    p.add_argument("--server", default=os.environ.get("CROSSCHECK_SERVER", DEFAULT_SERVER), metavar="URL",
                   help=f"server URL (default: $CROSSCHECK_SERVER or {DEFAULT_SERVER})")
    p.add_argument("--token", default=None, help=f"API token with the submit scope; the token is {tokens.SOURCES}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return with_exit_codes(_run, args)


def _read(path: Path) -> bytes:
    if not path.is_file():
        raise Unusable(f"{path}: no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise Unusable(f"{path}: over {MAX_FILE_BYTES >> 20} MiB")
    return path.read_bytes()


def _run(args: argparse.Namespace, err: Console) -> int:
    if args.attempt < 1:
        raise Unusable("--attempt must be 1 or more")
    kinds = {f: "report" if f.suffix.lower() == ".json" else "junit" if f.suffix.lower() == ".xml" else "" for f in args.files}
    unknown = [str(f) for f, k in kinds.items() if not k]
    if unknown:
        raise Unusable(f"{', '.join(unknown)}: upload a runtime report (.json) or a pytest JUnit file (.xml)")
    if (args.metrics or args.operator) and "junit" not in kinds.values():
        raise Unusable("--metrics and --operator go with a JUnit (.xml) file")
    bodies = {f: _read(f) for f in args.files}  # every file is readable before anything is sent
    sidecar = _read(args.metrics) if args.metrics else None
    labels = labels_of(args.label)
    params: dict[str, Any] = {"suite": args.suite, "run_key": args.run_key or uuid.uuid4().hex,
                              "attempt": args.attempt, "label": [f"{k}={v}" for k, v in labels.items()
                                                                   if k not in ("branch", "commit", "pipeline")]}
    params.update({k: labels[k] for k in ("branch", "commit", "pipeline") if k in labels})
    api = Api(args.server, token_of(args.token), timeout_s=600.0)
    out = Console()
    try:
        for path, data in bodies.items():
            if kinds[path] == "report":
                answer = api.json("POST", "/ingest/report", params=params, content=data,
                                  headers={"Content-Type": "application/json"})
            else:
                files: dict[str, Any] = {"junit": (path.name, data, "application/xml")}
                if sidecar is not None:
                    files["metrics"] = (args.metrics.name, sidecar, "application/json")
                extra = {"operator": args.operator} if args.operator else {}
                answer = api.json("POST", "/ingest/junit", params={**params, **extra}, files=files)
            out.print(f"{escape(path.name)}: stored {answer['stored']}, already there {answer['duplicates']} "
                      f"({', '.join(answer['operators'])})", highlight=False)
            if answer["unverified"]:
                err.print(f"[yellow]warning:[/] {answer['unverified']} result(s) stored as unverified: the fingerprint "
                          f"lacks {', '.join(answer['missing_fingerprint'])}")
        out.print(f"Suite run {answer['suite_run_id']} (run key {params['run_key']}): {answer['url']}", highlight=False)
    finally:
        api.close()
    return EXIT_OK
