"""`crosscheck bisect ... --server URL`: each revision the bisect runs goes to the service as the submission
`crosscheck submit` makes (the operator packed from that revision's checkout, the bisect's --mode and
--case), its job is waited for, and the step is read from the job's report (docs/bisect.md §6).

The search, the worktree and the reuse of byte-identical operators are the runtime's (runtime/cli/bisect.py):
this module is only its runner, handed in as a callable, so the runtime imports nothing of the client.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from runtime import exit_codes
from runtime.bisect import search
from runtime.cli import bisect

# Options of `crosscheck run` that set up this host's run (limits, the warm parent, the oracle's cache, the
# card): the service's workers run with their own, so giving one with --server is refused, not ignored.
HOST_ONLY = {"case_timeout": "--case-timeout", "memory": "--memory", "processes": "--processes", "disk": "--disk",
             "device": "--device", "no_daemon": "--no-daemon", "no_graph_verify": "--no-graph-verify",
             "verify_passes": "--verify-passes", "cache_dir": "--cache-dir", "jobs": "--jobs"}


def host_only_given(args: argparse.Namespace) -> list[str]:
    """The host-only options given a value other than their default."""
    p = argparse.ArgumentParser()
    bisect.add_arguments(p)
    return [flag for dest, flag in HOST_ONLY.items() if getattr(args, dest) != p.get_default(dest)]


class ServiceRunner:
    """A bisect runner (runtime.cli.bisect.Runner) that runs each revision's operator on the service."""

    def __init__(self, api: Any, args: argparse.Namespace) -> None:
        self.api, self.mode, self.cases, self.pypto = api, args.mode, list(args.case), args.pypto
        self.err = Console(stderr=True)

    def check(self) -> None:
        """Before any revision: the server answers and takes the token; warn when no online worker serves
        the mode (its jobs wait for one, as `crosscheck submit`'s do). Unreachable or Refused otherwise."""
        from client.submit import unserved

        for line in unserved(self.api, [self.mode]):
            self.err.print(f"[yellow]warning:[/] {escape(line)}")

    def __call__(self, sha: str, root: Path, operator: Any, _loaded: Any) -> search.Step:
        from client.api_client import Forbidden, Refused, Unreachable
        from client.submit import NO_WORKER_FOR_VERSION, job_outcome, send
        from runtime.intake import discover

        try:
            accepted = send(self.api, f"{operator.name}.zip", discover.pack(root, operator), [self.mode],
                            self.cases, commit=sha, pypto=self.pypto)
        except Forbidden as exc:  # no revision can go: the token is the problem, not this revision
            raise bisect.Abort(exit_codes.UNUSABLE, str(exc)) from None
        except Refused as exc:
            if NO_WORKER_FOR_VERSION in str(exc):
                raise bisect.Abort(exit_codes.INFRA, str(exc)) from None
            return bisect.skip(sha, f"unusable input: the server refused it: {exc}", exit_codes.UNUSABLE)
        except Unreachable as exc:
            return bisect.skip(sha, f"infrastructure: {exc}", exit_codes.INFRA)
        (job,) = accepted["jobs"]  # one mode, one job
        where = f"job {job['id']} {self.api.url}/jobs/{job['id']}"
        print(f"  {sha[:10]} submitted: {where}", flush=True)
        try:
            finished, report = self._finish(int(job["id"]))
        except Unreachable as exc:
            return _with_job(bisect.skip(sha, f"infrastructure: {exc}", exit_codes.INFRA), where)
        if report is None or not report.get("cases") or finished["status"] not in ("succeeded", "failed"):
            code, words = job_outcome(finished, report)  # error, expired, cancelled, timeout: no verdict
            return _with_job(bisect.skip(sha, words, code), where)
        from runtime.report import from_dict

        cases = from_dict(report).cases
        return _with_job(bisect.step_of_cases(sha, cases, str(report.get("mode") or self.mode)), where)

    def _finish(self, job_id: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Wait for the job (as `crosscheck submit --wait` does); the finished job and its report, if any."""
        from client.submit import wait

        finished = wait(self.api, [job_id], self.err, None)
        assert finished is not None  # no timeout given: it returns once the job finished
        (job,) = finished
        report = None
        if job["status"] in ("succeeded", "failed") or job.get("summary"):
            report = self.api.json("GET", f"/jobs/{job_id}/report")
        return job, report


def _with_job(step: search.Step, where: str) -> search.Step:
    step.job = where
    return step


def run(args: argparse.Namespace, api: Any) -> int:
    """The bisect with its revisions run on the service behind `api` (its checks made first); exit code."""
    from client.api_client import Refused, Unreachable

    given = host_only_given(args)
    if given:
        print(f"error: {', '.join(given)}: the service's workers run with their own settings; leave "
              f"{'it' if len(given) == 1 else 'them'} out with --server", file=sys.stderr)
        return exit_codes.UNUSABLE
    runner = ServiceRunner(api, args)
    try:
        runner.check()
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.UNUSABLE
    except Unreachable as exc:
        print(f"error: infrastructure: {exc}", file=sys.stderr)
        return exit_codes.INFRA
    return bisect.bisect_command(args, runner, where=f"through {api.url}")
