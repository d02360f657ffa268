"""`crosscheck submit`: upload a submission to a server, optionally wait and print the verdicts.

Exit codes (runtime/exit_codes.py), the same as `crosscheck run`: 0 every case acceptable for its
mode, 1 a kernel defect, 2 unusable input (the server refused the upload, or the golden failed),
3 infrastructure: no server, a job error, no online worker serves the mode, or --wait-timeout.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
from rich.console import Console
from rich.markup import escape

from runtime.intake import archive
from runtime import exit_codes, vocabulary
from runtime.modes import MODES
from runtime.devices.pypto_api import version_argument
from client import tokens

DEFAULT_SERVER = "http://127.0.0.1:8000"
UPLOAD_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".py")
SKIP_DIRS = {"__pycache__", ".git", "output", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
POLL_S = 1.0
FINISHED = ("succeeded", "failed", "error", "cancelled", "timeout", "expired")
# The start of the API's 409 for a pypto version no online worker has (server/services/pypto_route.py): exit 3.
NO_WORKER_FOR_VERSION = "no online worker has pypto"
TRANSIENT_TRIES = 5  # while waiting, ride out a server restart of a few seconds
# A finished job's status in words: "failed" only means its verdicts are not acceptable.
STATUS_WORDS = {"succeeded": "finished: every case acceptable",
                "failed": "finished: the job ran; the kernel's verdicts are not acceptable",
                "error": "error: the job could not run (infrastructure)",
                "cancelled": "cancelled before it finished", "timeout": "stopped: the job ran past its time limit",
                "expired": "expired: no online worker served its mode in time"}


class Infrastructure(Exception):
    """Exit code 3 with this message: no server, or nothing can run the job."""


class Unusable(Exception):
    """Exit code 2 with this message: bad input or a refused request."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("submit", help="upload a submission to a PTO Crosscheck server",
                       epilog="exit codes: 0 acceptable, 1 kernel defect, 2 unusable input, "
                              "3 infrastructure or no capable worker")
    p.add_argument("path", type=Path, help="operator package (folder, .zip, .tar.gz) or a .py script")
    p.add_argument("--server", default=os.environ.get("CROSSCHECK_SERVER", DEFAULT_SERVER), metavar="URL",
                   help=f"server URL (default: $CROSSCHECK_SERVER or {DEFAULT_SERVER})")
    p.add_argument("--token", default=None, metavar="TOKEN",
                   help=f"API token; the token is {tokens.SOURCES}")
    p.add_argument("--mode", action="append", choices=list(MODES), default=[],
                   help="where the kernel runs (repeatable; default: sim)")
    p.add_argument("--case", action="append", default=[], metavar="ID", help="run only this case (repeatable)")
    p.add_argument("--operator", default=None, metavar="NAME", help="operator name (default: the package's op_name)")
    p.add_argument("--branch", default=None, metavar="NAME", help="label: the branch the kernel comes from")
    p.add_argument("--commit", default=None, metavar="SHA", help="label: the commit the kernel comes from")
    p.add_argument("--author", default=None, metavar="NAME", help="label: who wrote the kernel")
    p.add_argument("--fresh", action="store_true",
                   help="run it even when the server has results of identical files under the same versions")
    p.add_argument("--pypto", type=version_argument, default=None, metavar="VERSION",
                   help="the pypto version the kernel was written for: only workers with it run the jobs")
    p.add_argument("--wait", action="store_true", help="wait for the jobs and print their reports")
    p.add_argument("--wait-timeout", "--timeout", dest="wait_timeout", type=float, default=None, metavar="S",
                   help="with --wait, give up waiting after S seconds, exit 3; the jobs go on (default: wait for ever)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the jobs (and reports) as JSON ('-': stdout)")
    p.set_defaults(func=run)


def bundle(path: Path, operator: str | None = None) -> tuple[str, bytes]:
    """(filename, bytes) to upload: a folder as a deterministic zip, a file as it is.

    Inside a checkout (docs/realops.md §5) only what the job needs is packed: a test file with what it imports,
    or one operator of a checkout folder (`operator` chooses when there are several).
    """
    from runtime.intake import discover
    from runtime.errors import SubmissionError

    try:
        if path.is_dir() and not (path / "test_cases.json").is_file():
            found = [op for op in discover.discover(path, [operator] if operator else None) if op.route != "none"]
            if not found:
                raise Unusable(f"{path}: no operator found: no test_cases.json, no test script and no gym "
                               "operator (docs/realops.md §5)")
            if len(found) > 1:
                names = ", ".join(op.name for op in found)
                raise Unusable(f"{path}: a checkout with {len(found)} runnable operators ({names}); choose one with "
                               "--operator NAME")
            return f"{found[0].name}.zip", discover.pack(path, found[0])
        test = discover.of_test_file(path) if path.is_file() and path.suffix == ".py" else None
        if test is not None:
            return f"{path.stem}.zip", discover.pack(imports_root(path), test)
    except SubmissionError as exc:
        raise Unusable(str(exc)) from None
    if path.is_dir():
        return f"{path.resolve().name}.zip", zip_folder(path)
    if path.is_file():
        if not path.name.lower().endswith(UPLOAD_SUFFIXES):
            raise Unusable(f"{path}: upload an operator package (folder, .zip, .tar.gz) or a .py script")
        return path.name, path.read_bytes()
    raise Unusable(f"{path}: no such file or folder")


def imports_root(test_file: Path) -> Path:
    from runtime.intake.imports import tree_root

    root = tree_root(test_file)
    assert root is not None  # discover.of_test_file found it
    return root


def zip_folder(folder: Path) -> bytes:
    """The same files always give the same bytes (fixed order, times and modes), so the same sha256."""
    members = []
    for file in folder.rglob("*"):
        rel = file.relative_to(folder)
        if file.is_file() and not SKIP_DIRS & set(rel.parts[:-1]) and file.suffix != ".pyc":
            members.append((rel.as_posix(), file.read_bytes()))
    return archive.write_zip(members)


def resolve_token(explicit: str | None) -> str | None:
    return explicit or os.environ.get("CROSSCHECK_TOKEN") or tokens.read_tokens(tokens.data_dir_from_env()).get("admin")


@dataclass
class Server:
    http: httpx.Client
    url: str

    def call(self, method: str, path: str, tries: int = 1, **kwargs: Any) -> httpx.Response:
        for attempt in range(tries):
            try:
                response = self.http.request(method, "/api/v1" + path, **kwargs)
            except httpx.TransportError as exc:
                if attempt + 1 < tries:
                    time.sleep(POLL_S * (attempt + 1))
                    continue
                raise Infrastructure(f"cannot reach the server at {self.url}: {exc}") from None
            if response.status_code >= 500 and attempt + 1 < tries:
                time.sleep(POLL_S * (attempt + 1))
                continue
            if response.status_code >= 500:
                raise Infrastructure(f"the server failed {method} {path} (HTTP {response.status_code}): "
                                     f"{_detail(response)}")
            if response.status_code == 409 and _detail(response).startswith(NO_WORKER_FOR_VERSION):
                raise Infrastructure(f"the server refused {method} {path}: {_detail(response)}")
            if response.status_code in (401, 403):
                raise Unusable(f"the server refused the token (HTTP {response.status_code}): {_detail(response)}; "
                               f"{tokens.refused_hint()}")
            if response.status_code >= 400:
                raise Unusable(f"the server refused {method} {path} (HTTP {response.status_code}): "
                               f"{_detail(response)}")
            return response
        raise AssertionError("unreachable")


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        return response.text[:500]
    if isinstance(detail, list):  # FastAPI validation errors
        return "; ".join(f"{'.'.join(str(x) for x in d.get('loc', []))}: {d.get('msg')}" for d in detail)
    return str(detail)


def run(args: argparse.Namespace) -> int:
    err = Console(stderr=True)
    try:
        return _run(args, err)
    except Unusable as exc:
        err.print(f"[bold red]error:[/] unusable input: {escape(str(exc))}")
        return exit_codes.UNUSABLE
    except Infrastructure as exc:
        err.print(f"[bold red]error:[/] infrastructure: {escape(str(exc))}")
        return exit_codes.INFRA


def _run(args: argparse.Namespace, err: Console) -> int:
    filename, data = bundle(args.path, args.operator)
    token = resolve_token(args.token)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=args.server.rstrip("/"), headers=headers, timeout=60.0) as http:
        server = Server(http, args.server)
        # --wait: someone waits for it, so the server dispatches it before batch jobs (docs/platform.md §4).
        accepted = send(server, filename, data, args.mode or ["sim"], args.case, operator=args.operator,
                        branch=args.branch, commit=args.commit, author=args.author, pypto=args.pypto,
                        interactive="true" if args.wait else None, fresh="true" if args.fresh else None)
        jobs = accepted["jobs"]
        reused = set((accepted.get("reused") or {}).values())
        err.print(f"submission {accepted['submission_id']}: " + ", ".join(
            f"job {j['id']} ({j['mode']}" + (", reused: the same files ran there; --fresh runs them again)"
                                            if j["id"] in reused else ")") for j in jobs))
        for line in unserved(server, [j["mode"] for j in jobs]):
            err.print(f"[yellow]warning:[/] {escape(line)}")
        if not args.wait:
            _write_json(args.json, {"submission_id": accepted["submission_id"], "jobs": jobs})
            return exit_codes.OK
        finished = wait(server, [j["id"] for j in jobs], err, args.wait_timeout)
        if finished is None:
            return exit_codes.INFRA
        return _report(server, accepted["submission_id"], finished, args.json)


def send(server: Any, filename: str, data: bytes, modes: list[str], cases: list[str],
         **labels: str | None) -> dict[str, Any]:
    """POST /submissions: the bundle, its modes and cases, and the labels given (operator, branch, commit,
    author, pypto); the server's answer (submission_id, jobs). `server` is a Server or a client.api_client.Api."""
    form: dict[str, str | list[str]] = {"modes": list(dict.fromkeys(modes)), "cases": list(cases)}
    form.update({k: v for k, v in labels.items() if v})
    # One key for this upload: a retried upload cannot create a second submission.
    key = uuid.uuid4().hex
    return dict(server.call("POST", "/submissions", tries=3, data=form, files={"file": (filename, data)},
                            headers={"Idempotency-Key": key}).json())


def unserved(server: Any, modes: list[str]) -> list[str]:
    """'no online worker serves npu: one was last seen 3 h ago' for each mode nothing online runs."""
    try:
        workers = server.call("GET", "/workers").json()["items"]
    except (Unusable, Infrastructure, KeyError, ValueError):
        return []  # the token may not read workers; the jobs still run when a worker comes
    out = []
    for mode in dict.fromkeys(modes):
        serving = [w for w in workers if mode in ((w.get("capabilities") or {}).get("modes") or w.get("queues") or [])]
        if any(w.get("online") for w in serving):
            continue
        seen = max((w["last_heartbeat"] for w in serving), default=None)
        when = f"one was last seen {_ago(seen)} ago" if seen else "none has ever reported"
        out.append(f"no online worker serves {mode}: {when}; {mode.upper()} jobs wait until one comes online")
    return out


def _ago(iso: str) -> str:
    from datetime import UTC, datetime

    then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    s = max(0.0, (datetime.now(UTC) - (then if then.tzinfo else then.replace(tzinfo=UTC))).total_seconds())
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.0f} h" if s < 172800 \
        else f"{s / 86400:.0f} d"


def _state(job: dict[str, Any]) -> str:
    status = str(job["status"])
    if status == "queued":
        pos = job.get("queue_position")
        return f"queued (position {pos} in {job['queue']})" if pos else "queued"
    if status == "awaiting_npu":
        pos = job.get("queue_position")
        return "awaiting an NPU worker (none online" + (f"; position {pos} in the npu queue)" if pos else ")")
    if status == "running":
        p = job.get("progress") or {}
        if p.get("total"):
            last = f", last {p.get('case')}: {p.get('verdict')}" if p.get("case") else ""
            return f"running case {min(int(p.get('done', 0)) + 1, int(p['total']))}/{p['total']}{last}"
        return f"running on {job.get('worker') or 'a worker'}"
    return STATUS_WORDS.get(status, status)


def wait(server: Any, ids: list[int], err: Console, timeout_s: float | None) -> list[dict[str, Any]] | None:
    """Poll until every job finished; the jobs, or None after --wait-timeout. `server`: a Server or an Api."""
    from rich.live import Live
    from rich.table import Table

    deadline = time.monotonic() + timeout_s if timeout_s else None
    last: dict[int, str] = {}

    def table(jobs: list[dict[str, Any]]) -> Table:
        t = Table(show_header=False, box=None)
        for j in jobs:
            t.add_row(f"job {j['id']}", j["mode"], escape(_state(j)))
        return t

    with Live(console=err, auto_refresh=False, transient=True) as live:
        while True:
            jobs = [server.call("GET", f"/jobs/{i}", tries=TRANSIENT_TRIES).json() for i in ids]
            if err.is_terminal:
                live.update(table(jobs), refresh=True)
            else:
                for j in jobs:  # a plain log line per change when not on a terminal
                    if last.get(j["id"]) != _state(j):
                        last[j["id"]] = _state(j)
                        err.print(f"job {j['id']} ({j['mode']}): {escape(_state(j))}")
            if all(j["status"] in FINISHED for j in jobs):
                return jobs
            if deadline is not None and time.monotonic() > deadline:
                err.print(f"[bold red]error:[/] gave up waiting after {timeout_s:.0f} s; the jobs go on")
                return None
            time.sleep(POLL_S)


def _report(server: Server, submission_id: int, jobs: list[dict[str, Any]], json_path: Path | None) -> int:
    from runtime.cli.console import print_report
    from runtime.report import from_dict

    out = Console(stderr=json_path is not None and str(json_path) == "-")
    err = Console(stderr=True)
    codes = []
    dump = []
    for job in jobs:
        report = None
        has_report = job["status"] in ("succeeded", "failed") or job.get("summary")  # a cancelled job may have one
        if has_report:
            report = server.call("GET", f"/jobs/{job['id']}/report", tries=TRANSIENT_TRIES).json()
        dump.append({**job, "report": report})
        code, words = job_outcome(job, report)
        codes.append(code)
        if report is not None:
            print_report(from_dict(report), out)
        colour = "bold green" if code == exit_codes.OK else "bold red"
        err.print(f"[{colour}]job {job['id']} ({job['mode']}):[/] {escape(words)}", soft_wrap=True)
        err.print(f"  {server.url.rstrip('/')}/jobs/{job['id']}", highlight=False, soft_wrap=True)
    _write_json(json_path, {"submission_id": submission_id, "jobs": dump})
    return exit_codes.combine(codes)


def job_outcome(job: dict[str, Any], report: dict[str, Any] | None) -> tuple[int, str]:
    """(exit code, what happened in words) for one finished job."""
    status = job["status"]
    if status == "expired":
        return exit_codes.INFRA, f"no online worker serves {job['mode']}: {job.get('error') or 'the job expired'}"
    if status == "error":
        return exit_codes.INFRA, "infrastructure: " + (job.get("error") or "the job could not run")
    if report is not None and report.get("cases") and status in ("succeeded", "failed"):
        return (exit_codes.of_cases(report["cases"], report["mode"]),
                vocabulary.summary(report["cases"], report["mode"]))
    if status in ("cancelled", "timeout"):
        return exit_codes.INFRA, STATUS_WORDS[status] + (f": {job['error']}" if job.get("error") else "")
    return exit_codes.UNUSABLE, "no case was judged" + (f": {job['error']}" if job.get("error") else "")


def _write_json(path: Path | None, data: dict[str, Any]) -> None:
    if path is None:
        return
    text = json.dumps(data, indent=2, default=str)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
    else:
        path.write_text(text)
