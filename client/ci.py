"""`crosscheck ci run CHECKOUT`: every operator of a checkout as one suite run, gated on regressions.

Exit codes: 0 the gate passed; 1 the gate failed (--fail-on); 2 unusable input (bad options or
labels, nothing discovered, a refused token or request); 3 infrastructure (the server is
unreachable, or results did not arrive within --wait-timeout). Never 0 without having run something.
"""
from __future__ import annotations

import argparse
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding

from runtime import vocabulary
from runtime.modes import MODES
from runtime.devices.pypto_api import version_argument
from client.api_client import Api, Forbidden, Refused, Unreachable
from client import ci_report, tokens
from client.submit import NO_WORKER_FOR_VERSION

EXIT_OK, EXIT_FAIL, EXIT_UNUSABLE, EXIT_INFRA = 0, 1, 2, 3
DEFAULT_SERVER = "http://127.0.0.1:8000"
FAIL_ON = ("regression", "drift", "perf", "any-fail", "never")
POLL_S = 2.0
PAGE = 5000
LISTED = 15  # changes printed per kind; the suite page has them all
SUBMIT_AT_ONCE = 4


class Unusable(Exception):
    """Exit 2 with this message."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ci = sub.add_parser("ci", help="nightly CI: run a whole checkout as a suite run")
    ci_sub = ci.add_subparsers(dest="ci_command", required=True, metavar="ACTION")
    p = ci_sub.add_parser("run", help="submit every operator of CHECKOUT as one suite run and wait",
                          description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkout", type=Path, help="the checkout's root folder")
    p.add_argument("--server", default=os.environ.get("CROSSCHECK_SERVER", DEFAULT_SERVER),
                   help=f"server URL (default: $CROSSCHECK_SERVER or {DEFAULT_SERVER})")
    p.add_argument("--token", default=None, help=f"API token with the submit scope; the token is {tokens.SOURCES}")
    p.add_argument("--suite", required=True, help="the suite's name, e.g. nightly-ops")
    p.add_argument("--mode", action="append", choices=list(MODES), default=[], help="repeatable; default sim")
    p.add_argument("--op", action="append", default=[], metavar="NAME", help="only this operator (repeatable)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="commit=..., branch=..., pipeline=URL, ... (repeatable)")
    p.add_argument("--run-key", default=None, metavar="KEY",
                   help="this run's id; the same key resumes the same run (default: a new one)")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    p.add_argument("--annotations", metavar="FORMAT=FILE", default=None,
                   help="write lint findings and diagnoses at file:line for CI: github=FILE (workflow commands "
                        "`::error file=,line=::`; github=- prints them) or gitlab=FILE (a code-quality JSON report)")
    p.add_argument("--fail-on", choices=FAIL_ON, default="regression",
                   help="exit 1 on: a regression against the previous run of the branch (default), a regression "
                        "or a case whose precision drifts (docs/ci.md), a regression or a case whose SIM cost estimate "
                        "rose (perf), any case that is a kernel defect (or still pending), or never; "
                        f"{vocabulary.GATE_NOTE}")
    p.add_argument("--pypto", type=version_argument, default=None, metavar="VERSION",
                   help="the pypto version the kernels were written for: only workers with it run the jobs")
    p.add_argument("--bisect", action="store_true",
                   help="bisect each regressed operator on this host between the previous run's commit label "
                        "and this one's, and name the culprit (docs/ci.md)")
    p.add_argument("--bisect-budget", type=float, default=30.0, metavar="MIN",
                   help="minutes all the bisects may take together (default: 30)")
    p.add_argument("--no-reuse", action="store_true", help="run every operator, even unchanged ones")
    p.add_argument("--benchmark", action="store_true",
                   help="CHECKOUT is a pypto-gym benchmark run (its report dir, or custom/<level>/<op>/ beside the "
                        "KernelBench tasks): every task is an operator (docs/kernelbench.md §5)")
    p.add_argument("--wait-timeout", "--timeout", dest="timeout", type=float, default=None, metavar="S",
                   help="give up waiting after S seconds (exit 3)")
    p.set_defaults(func=run)


def labels_of(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise Unusable(f"--label {item!r}: use KEY=VALUE, e.g. --label branch=main")
        out[k.strip()] = v.strip()
    return out


def token_of(explicit: str | None) -> str | None:
    """--token, else $CROSSCHECK_TOKEN, else the admin token `crosscheck up` saved in $DATA_DIR."""
    if explicit or os.environ.get("CROSSCHECK_TOKEN"):
        return explicit or os.environ.get("CROSSCHECK_TOKEN")
    return tokens.read_tokens(tokens.data_dir_from_env()).get("admin")


def run(args: argparse.Namespace) -> int:
    return with_exit_codes(_run, args)


def with_exit_codes(work: Any, args: argparse.Namespace) -> int:
    """Run a client command's `work(args, err)`; unusable input and an unreachable server become one line
    on stderr and exit 2 or 3 (`crosscheck ci run` and `crosscheck upload`)."""
    err = Console(stderr=True)
    try:
        return int(work(args, err))
    except (Unusable, Refused) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return EXIT_UNUSABLE
    except Unreachable as exc:
        err.print(f"[bold red]error:[/] infrastructure: {escape(str(exc))}")
        return EXIT_INFRA


@dataclass
class Submitted:
    jobs: int = 0
    reused: int = 0
    broken: list[Any] = field(default_factory=list)


def _run(args: argparse.Namespace, err: Console) -> int:
    from runtime.intake.discover import discover
    from runtime.errors import SubmissionError
    from client.junit_out import Broken

    labels = labels_of(args.label)
    modes = list(dict.fromkeys(args.mode or ["sim"]))
    kind, _, path = (args.annotations or "").partition("=")
    if args.annotations and (kind not in ci_report.ANNOTATIONS or not path):
        raise Unusable(f"--annotations {args.annotations!r}: use github=FILE or gitlab=FILE (github=- prints them)")
    try:
        found = _benchmark_operators(args) if getattr(args, "benchmark", False) else \
            discover(args.checkout, args.op or None)
    except SubmissionError as exc:
        raise Unusable(str(exc)) from None
    runnable = [op for op in found if op.route != "none"]
    broken = [Broken(op.name, op.problem) for op in found if op.route == "none"]
    for b in broken:
        err.print(f"[yellow]cannot run[/] {escape(b.operator)}: {escape(b.why)}")
    if not runnable:
        raise Unusable(f"no runnable operator under {args.checkout} (a package is a folder with test_cases.json "
                       "and a *_impl.py, or a gym test folder paired with a kernel folder: docs/realops.md §5)" + (f"; {len(broken)} could not be loaded" if broken else ""))
    api = Api(args.server, token_of(args.token))
    try:
        run_key = args.run_key or uuid.uuid4().hex
        suite_run = api.json("POST", "/suite-runs", json={"suite": args.suite, "run_key": run_key, "labels": labels,
                                                          "modes": modes, "reuse": not args.no_reuse})
        err.print(f"suite run [bold]{suite_run['id']}[/] of {escape(args.suite)}: {len(runnable)} operator(s), "
                  f"{'/'.join(m.upper() for m in modes)}  {suite_run['url']}")
        _warn_without_workers(api, modes, err)
        sub = _submit_all(api, args.checkout, suite_run["id"], runnable, modes, err, args.pypto)
        broken += sub.broken
        if getattr(args, "benchmark", False):  # the gym's NPU verdicts beside ours (docs/kernelbench.md §5)
            from client import gym_results

            sent, stopped = gym_results.upload(api, args.checkout, runnable, args.suite, run_key, labels)
            err.print(f"the gym's own verdicts: {sent} of {len(runnable)} task(s) uploaded as NPU results"
                      + (f" (stopped: {escape(stopped)})" if stopped else ""))
        if sub.jobs == 0 and sub.reused == 0:
            raise Unusable("the server refused every operator; nothing ran")
        api.call("POST", f"/suite-runs/{suite_run['id']}/close")
        try:
            final = _wait(api, suite_run["id"], err, args.timeout)
        except _TimedOut as late:
            if args.junit:  # what is known so far: pending cases are errors
                from client import junit_out

                junit_out.write(args.junit, junit_out.build(args.suite, late.run["url"],
                                                            _results(api, late.run["id"]), broken))
            raise
        return _finish(api, args, final, broken, err, {op.name: op.folder for op in runnable})
    finally:
        api.close()


def _benchmark_operators(args: argparse.Namespace) -> list[Any]:
    from runtime.intake import benchmark_run

    found = benchmark_run.discover(args.checkout)
    return [op for op in found if not args.op or op.name in args.op]


def _warn_without_workers(api: Api, modes: list[str], err: Console) -> None:
    """Jobs of a mode no online worker serves wait in the queue: say so now, not at --wait-timeout."""
    try:
        online = [w for w in api.json("GET", "/workers")["items"] if w.get("online")]
    except Refused:
        return  # the token may not read workers; the run still works
    for mode in modes:
        if not any(mode in (w.get("queues") or []) for w in online):
            err.print(f"[yellow]warning:[/] no online worker serves the {mode} queue: {mode.upper()} jobs wait "
                      "until one starts (reused results need none)")


def _submit_one(api: Api, checkout: Path, run_id: int, op: Any, modes: list[str],
                pypto: str | None) -> dict[str, Any] | str:
    """The server's answer, or why the operator was not submitted."""
    from runtime.intake.discover import pack
    from runtime.errors import SubmissionError

    try:
        data = pack(checkout, op)
        return dict(api.json("POST", f"/suite-runs/{run_id}/submissions", data={"operator": op.name, "modes": modes,
                                                                       **({"pypto": pypto} if pypto else {})},
                             files={"file": (f"{op.name}.zip", data)}))
    except SubmissionError as exc:
        return f"not submitted: {exc}"
    except Forbidden:
        raise
    except Refused as exc:
        if NO_WORKER_FOR_VERSION in str(exc):  # nothing of the checkout can run: infrastructure, exit 3
            raise Unreachable(str(exc)) from None
        return f"refused: {exc}"


def _submit_all(api: Api, checkout: Path, run_id: int, ops: list[Any], modes: list[str], err: Console,
                pypto: str | None = None) -> Submitted:
    """Upload the operators a few at a time (the server checks and links each one), reporting in order."""
    from concurrent.futures import ThreadPoolExecutor

    from client.junit_out import Broken

    out = Submitted()
    with ThreadPoolExecutor(max_workers=SUBMIT_AT_ONCE) as pool:
        answers = pool.map(lambda op: _submit_one(api, checkout, run_id, op, modes, pypto), ops)
        for op, accepted in zip(ops, answers, strict=True):
            if isinstance(accepted, str):
                out.broken.append(Broken(op.name, accepted))
                err.print(f"[red]{escape(accepted.split(':', 1)[0])}[/] {escape(op.name)}: "
                          f"{escape(accepted.split(': ', 1)[1])}")
                continue
            parts = [f"reused {m.upper()} (job {', '.join(map(str, j))})" for m, j in accepted["reused"].items()]
            parts += [f"job {j['id']} ({j['mode'].upper()})" for j in accepted["jobs"]]
            out.jobs += len(accepted["jobs"])
            out.reused += len(accepted["reused"])
            err.print(f"  {escape(op.name)}: {', '.join(parts)}", highlight=False)
    return out


def _states(progress: dict[str, int]) -> str:
    return " · ".join(f"{n} {k}" for k, n in sorted(progress.items())) or "nothing yet"


def _wait(api: Api, run_id: int, err: Console, timeout_s: float | None) -> dict[str, Any]:
    """Poll until the run finishes; a live bar on a terminal, a line per change otherwise."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    deadline = time.monotonic() + timeout_s if timeout_s else None
    last = ""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("waiting", total=None)
        while True:
            current = api.json("GET", f"/suite-runs/{run_id}")
            progress = current.get("progress") or {}
            total = sum(progress.values())
            done = sum(n for k, n in progress.items() if k in ("done", "reused", "uploaded"))
            bar.update(task, total=total or None, completed=done, description=_states(progress))
            if not err.is_terminal and _states(progress) != last:
                last = _states(progress)
                err.print(f"  {last}", highlight=False)
            if current["status"] == "finished":
                return dict(current)
            if deadline is not None and time.monotonic() > deadline:
                raise _TimedOut(current)
            time.sleep(POLL_S)


class _TimedOut(Unreachable):
    def __init__(self, run: dict[str, Any]):
        super().__init__(f"suite run {run['id']} is not finished after --wait-timeout ({_states(run.get('progress') or {})}); "
                         f"its jobs go on: {run.get('url', '')}")
        self.run = run


def _results(api: Api, run_id: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": PAGE, **({"cursor": cursor} if cursor is not None else {})}
        page = api.json("GET", f"/suite-runs/{run_id}/results", params=params)
        items += page["items"]
        cursor = page.get("next_cursor")
        if cursor is None:
            return items


def _finish(api: Api, args: argparse.Namespace, final: dict[str, Any], broken: list[Any], err: Console,
            folders: dict[str, str] | None = None) -> int:
    from client import ci_bisect, junit_out

    results = _results(api, final["id"])
    cmp = api.json("GET", f"/suite-runs/{final['id']}/compare")
    drifting = {(d["operator"], d["case"], d["mode"]): d["why"] for d in (final.get("totals") or {}).get("drifting", [])}
    for r in results:  # a property of the JUnit testcase (client/junit_out.py)
        if (r["operator"], r["case"], r["mode"]) in drifting:
            r["drift"] = drifting[(r["operator"], r["case"], r["mode"])]
    slower = {(p["operator"], p["case"], p["mode"]): p["why"] for p in (final.get("totals") or {}).get("perf_regressions", [])}
    for r in results:
        if (r["operator"], r["case"], r["mode"]) in slower:
            r["perf"] = slower[(r["operator"], r["case"], r["mode"])]
    bisect_notes = ci_bisect.attach(api, args, final, cmp, results) if args.bisect else []
    if args.junit:
        junit_out.write(args.junit, junit_out.build(args.suite, final["url"], results, broken))
    out = Console()
    _summary(out, final, cmp, results, broken)
    for note in bisect_notes:
        out.print(escape(note), highlight=False, soft_wrap=False)
    if args.junit:
        out.print(f"JUnit: {args.junit}")
    if args.annotations:
        _annotate(api, args, results, folders or {}, out)
    failing = [r for r in results if r["verdict"] is None or ci_report.outcome_of(r) == vocabulary.FAILED]
    _gate_line(out, args.fail_on, cmp)
    if args.fail_on in ("regression", "drift", "perf") and cmp["counts"]["regressions"]:
        return EXIT_FAIL
    if args.fail_on == "perf" and (final.get("totals") or {}).get("perf"):
        return EXIT_FAIL
    if args.fail_on == "drift" and (final.get("totals") or {}).get("drift"):
        return EXIT_FAIL
    if args.fail_on == "any-fail" and (failing or broken):
        return EXIT_FAIL
    return EXIT_OK


def _gate_line(out: Console, fail_on: str, cmp: dict[str, Any]) -> None:
    """One line saying what the regression gate decided and why; a first run has nothing to regress against."""
    if fail_on not in ("regression", "drift", "perf"):
        return
    if cmp.get("other_id") is None:
        out.print("gate: passed (exit 0): no baseline (no earlier run of this suite on this branch), so nothing to "
                  f"regress against; {vocabulary.GATE_NOTE}", highlight=False)
        return
    n = cmp["counts"]["regressions"]
    out.print(f"gate: {'failed' if n else 'passed'} against run {cmp['other_id']}: {_n(n, 'regression')}; "
              f"{vocabulary.GATE_NOTE}", highlight=False)


def _annotate(api: Api, args: argparse.Namespace, results: list[dict[str, Any]], folders: dict[str, str],
              out: Console) -> None:
    """Lint findings and diagnoses of the run's jobs at file:line, as --annotations asked."""
    jobs = {r["job_id"]: r["operator"] for r in results if r.get("job_id")}
    reports = [(api.json("GET", f"/jobs/{job_id}/report"), folders.get(op, ".")) for job_id, op in sorted(jobs.items())]
    items = ci_report.findings(reports, args.checkout)
    kind, _, path = args.annotations.partition("=")
    text = ci_report.github(items) if kind == "github" else ci_report.gitlab(items)
    if path == "-":
        out.file.write(text)
    else:
        Path(path).write_text(text)
        out.print(f"annotations ({kind}): {len(items)} at file:line in {path}", highlight=False)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _summary(out: Console, run: dict[str, Any], cmp: dict[str, Any], results: list[dict[str, Any]],
             broken: list[Any]) -> None:
    t = run.get("totals") or {}
    out.print(f"[bold]Suite run {run['id']}[/] ({escape(run['suite'])}, {escape(run.get('branch') or 'no branch')}"
              f"{', ' + escape(run['commit'][:12]) if run.get('commit') else ''}): {t.get('cases', 0)} cases: "
              f"{ci_report.counts_line(results)}; {t.get('reused', 0)} reused", highlight=False)
    for mode, counts in sorted((t.get("by_mode") or {}).items()):
        out.print(Padding(f"{mode.upper()}: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())), (0, 0, 0, 2)),
                  highlight=False)
    if cmp.get("other_id") is None:
        out.print("  no earlier run of this suite on this branch: nothing to compare with", highlight=False)
    else:
        c = cmp["counts"]
        out.print(f"Against run {cmp['other_id']}: {_n(c['regressions'], 'regression')}, {c['fixes']} fixed, "
                  f"{c['new']} new, {c['vanished']} vanished", highlight=False)
        out.print(f"  {_n(c['new_flags'], 'new sim_garbage flag')}", highlight=False)
        for kind, style in (("regressions", "red"), ("fixes", "green"), ("new_flags", "magenta"),
                            ("vanished", "yellow")):
            for ch in cmp[kind][:LISTED]:
                where = f"{ch['operator']} / {ch['case']}" + (f" ({ch['mode'].upper()})" if ch["mode"] else "")
                out.print(f"  [{style}]{kind.rstrip('s').replace('_', ' ')}[/] {escape(where)}: {escape(ch['why'])}",
                          highlight=False)
            if len(cmp[kind]) > LISTED:
                out.print(f"  ... and {len(cmp[kind]) - LISTED} more {kind.replace('_', ' ')}", highlight=False)
    # by outcome, worst first, each with the deciding evidence, the rule that explains it and its job page
    ci_report.print_outcomes(out, results, run["url"])
    _drift_summary(out, t)
    _perf_summary(out, t)
    if broken:
        out.print(f"[red]{len(broken)} operator(s) not run[/]: " + ", ".join(escape(b.operator) for b in broken))
    unverified = sum(1 for r in results if not r["verified"])
    if unverified:
        out.print(f"[yellow]{unverified} unverified result(s)[/] (no pypto/CANN/device fingerprint)")
    out.print(f"Suite page: {run['url']}", highlight=False, soft_wrap=True)


def _drift_summary(out: Console, totals: dict[str, Any]) -> None:
    """Cases whose error grows while still within tolerance (server/services/drift.py): never a failure
    by itself, gated with --fail-on drift."""
    count = int(totals.get("drift") or 0)
    if not count:
        return
    out.print(f"[yellow]Precision drift ({count})[/], still within tolerance:", highlight=False)
    for d in (totals.get("drifting") or [])[:LISTED]:
        out.print(Padding(f"{escape(d['operator'])} / {escape(d['case'])} ({d['mode'].upper()}): {escape(d['why'])}",
                          (0, 0, 0, 2)), highlight=False)
    if count > min(LISTED, len(totals.get("drifting") or [])):
        out.print("  ... and more on the suite page", highlight=False)


def _perf_summary(out: Console, totals: dict[str, Any]) -> None:
    """Cases whose SIM cost estimate rose against the previous run (server/services/perf.py): never a
    failure by itself, gated with --fail-on perf."""
    count = int(totals.get("perf") or 0)
    if count:
        out.print(f"[yellow]Slower in the SIM cost model ({count})[/]:", highlight=False)
        for p in (totals.get("perf_regressions") or [])[:LISTED]:
            out.print(Padding(f"{escape(p['operator'])} / {escape(p['case'])}: {escape(p['why'])}", (0, 0, 0, 2)),
                      highlight=False)
        if count > min(LISTED, len(totals.get("perf_regressions") or [])):
            out.print("  ... and more on the suite page", highlight=False)
    if totals.get("perf_pypto_changed"):
        out.print(f"  {_n(int(totals['perf_pypto_changed']), 'SIM estimate')} not compared: pypto changed since "
                  "the previous run", highlight=False)

