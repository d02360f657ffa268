"""`crosscheck bisect CHECKOUT --op NAME --good REV --bad REV`: the first commit that broke an operator
(docs/bisect.md); with `--metric aicore_us --threshold 10%`, the first commit whose SIM cost estimate
rose by the threshold against the good one's (docs/bisect.md §5).

Exit codes: 0 the first bad commit was found, 2 unusable input (not a git checkout, an unknown
revision, a premise that does not hold, or only skipped revisions left), 3 infrastructure.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from runtime import exit_codes, vocabulary
from runtime.bisect import git, metric, search
from runtime.cli import cli
from runtime.errors import HostError, SubmissionError

EXIT_HELP = "exit codes: 0 first bad commit found, 2 unusable input or a premise that does not hold, 3 infrastructure"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("bisect", help="find the commit that turned an operator from acceptable to kernel defect",
                       description=__doc__.split("\n\n")[0], epilog=EXIT_HELP)
    add_arguments(p)
    p.set_defaults(func=bisect_command)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkout", type=Path, help="a git checkout (its working tree is never touched)")
    p.add_argument("--op", required=True, metavar="NAME", help="the operator (names match ignoring case and '_')")
    p.add_argument("--good", required=True, metavar="REV", help="a revision where the operator is acceptable")
    p.add_argument("--bad", required=True, metavar="REV", help="a later revision where it is a kernel defect")
    p.add_argument("--metric", choices=metric.METRICS, default="verdict",
                   help="what turns a revision bad: its verdict class (default), or its SIM cost estimate "
                        "(aicore_us) rising by --threshold against --good's")
    p.add_argument("--threshold", type=metric.threshold, default=0.10, metavar="PCT",
                   help="with --metric aicore_us: the rise that is bad, e.g. 10%% (default)")
    cli.add_case_arguments(p)
    p.add_argument("--json", type=Path, metavar="FILE", help="write the result here as JSON ('-' for stdout)")


class Abort(Exception):
    """Ends the bisect with this exit code and message (a runner may raise it: nothing can be judged)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# Runs one revision's operator: (sha, the operator's folder at that revision, its FoundOperator, its loaded
# Submission) -> the step. The default runs it on this host; client/bisect_remote.py submits it to the service.
Runner = Callable[[str, Path, Any, Any], search.Step]


def bisect_command(args: argparse.Namespace, runner: Runner | None = None, where: str = "") -> int:
    """`where` says where the runs go when a `runner` is given, e.g. "through http://host:8000"."""
    previous = signal.signal(signal.SIGTERM, _terminated)  # the worktree goes on that way out too
    try:
        return _bisect(args, runner, where)
    except Abort as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except SubmissionError as exc:  # git.GitError among them
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.UNUSABLE
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _bisect(args: argparse.Namespace, runner: Runner | None, where: str) -> int:
    checkout = Path(args.checkout)
    top = git.top_level(checkout)
    inside = checkout.resolve().relative_to(top.resolve())  # the operator is looked for here in each revision
    good, bad = git.resolve(top, args.good, "--good"), git.resolve(top, args.bad, "--bad")
    if good == bad:
        raise Abort(exit_codes.UNUSABLE, f"--good and --bad are the same commit ({good[:12]})")
    if not git.is_ancestor(top, good, bad):
        raise Abort(exit_codes.UNUSABLE, f"--good {args.good} is not an ancestor of --bad {args.bad}")
    perf = args.metric == "aicore_us"
    if perf and args.mode != "sim":
        raise Abort(exit_codes.UNUSABLE, "--metric aicore_us needs --mode sim: the cost model's estimate "
                                         "exists only in SIM")
    revisions = git.between(top, good, bad)
    options = cli.run_options(args)
    print(f"bisecting {args.op}: {len(revisions) - 1} commit(s) after {good[:10]} up to {bad[:10]} "
          f"({args.mode}{', graph verify' if options.graph_verify and args.mode == 'sim' else ''}"
          f"{', ' + where if where else ''})", flush=True)
    if perf:
        print(f"bad: a case's AICore estimate {args.threshold:.0%} or more above --good's", flush=True)
    with git.worktree(top, good) as tree:
        prober = _Prober(tree, inside, args.op, options, runner)
        first = prober.probe(good)
        probe = prober.probe
        if perf:
            baseline = metric.estimates(first) if first.verdict_class != search.SKIP else {}
            if not baseline:
                raise Abort(exit_codes.INFRA if first.exit_code == exit_codes.INFRA else exit_codes.UNUSABLE,
                            f"--good {args.good} has no cost-model estimate to compare with: "
                            f"{first.reason or first.summary}")
            slower = metric.Slower(baseline, args.threshold)
            first = slower.classify(first)
            probe = lambda sha: slower.classify(prober.probe(sha))  # noqa: E731
        _print_step("good", first)
        _premise(first, "--good", args.good, search.ACCEPTABLE)
        last = probe(bad)
        _print_step("bad", last)
        _premise(last, "--bad", args.bad, search.DEFECT,
                 f"{args.threshold:.0%} slower than --good" if perf else None)
        outcome = search.bisect(revisions, first, last, probe,
                                on_step=lambda step, left: _print_step(str(prober.steps), step))
    return _finish(args, top, outcome, [first, last])


def _premise(step: search.Step, flag: str, rev: str, wanted: str, label: str | None = None) -> None:
    if step.verdict_class == wanted:
        return
    code = exit_codes.INFRA if step.exit_code == exit_codes.INFRA else exit_codes.UNUSABLE
    what = step.reason or step.summary
    raise Abort(code, f"{flag} {rev} is not {label or wanted} as the bisect needs: {what}")


class _Prober:
    """Checks a revision out in the worktree and runs the operator there, once per distinct content."""

    def __init__(self, tree: git.Worktree, inside: Path, op: str, options: Any, runner: Runner | None) -> None:
        self.tree, self.inside, self.op, self.options = tree, inside, op, options
        self.run = runner or self._run_here
        self.by_content: dict[str, search.Step] = {}
        self.steps = -2  # the two premises come first; the search's steps count from 1

    def probe(self, sha: str) -> search.Step:
        from runtime.intake import discover, submission

        self.steps += 1
        root = self.tree.checkout(sha) / self.inside
        want = discover.key(self.op)
        try:
            found = [o for o in (discover.discover(root) if root.is_dir() else [])
                     if want in (discover.key(o.name), discover.key(Path(o.folder).name))]
            if not found:
                return skip(sha, f"operator {self.op} not found at this revision", exit_codes.UNUSABLE)
            if found[0].route == "none":
                return skip(sha, f"operator {self.op} cannot run here: {found[0].problem}", exit_codes.UNUSABLE)
            loaded = submission.load_operator(root, found[0])
        except SubmissionError as exc:
            return skip(sha, f"operator {self.op} not usable here: {exc}", exit_codes.UNUSABLE)
        files = [(self.inside / f).as_posix() for f in found[0].files]
        seen = self.by_content.get(loaded.sha256)
        if seen is not None:
            return replace(seen, sha=sha, how="reused", reused_from=seen.reused_from or seen.sha, files=files)
        step = self.run(sha, root, found[0], loaded)
        step.content_sha256, step.files = loaded.sha256, files
        if step.exit_code != exit_codes.INFRA:  # an infrastructure failure is not a fact about this content
            self.by_content[loaded.sha256] = step
        return step

    def _run_here(self, sha: str, root: Path, _operator: Any, loaded: Any) -> search.Step:
        from runtime.runner import run_submission
        from runtime.warm import WarmParentError

        try:
            report = run_submission(root, self.options, loaded=loaded)
        except HostError as exc:  # no host here can run the mode at all: no revision can be judged
            raise Abort(exit_codes.INFRA, str(exc)) from None
        except WarmParentError as exc:
            return skip(sha, f"infrastructure: {exc}", exit_codes.INFRA)
        except SubmissionError as exc:
            return skip(sha, f"unusable input: {exc}", exit_codes.UNUSABLE)
        return step_of_cases(sha, report.cases, self.options.mode)


def step_of_cases(sha: str, cases: list[Any], mode: str) -> search.Step:
    """A run revision's step from its report's cases (runtime.report.CaseResult), wherever it ran."""
    code = exit_codes.of_cases(cases, mode)
    summary = vocabulary.summary(cases, mode)
    cls = {exit_codes.OK: search.ACCEPTABLE, exit_codes.KERNEL_DEFECT: search.DEFECT}.get(code, search.SKIP)
    return search.Step(sha, cls, "run", summary, reason=summary if cls == search.SKIP else "",
                       exit_code=code, cases={c.case: _case(c) for c in cases})


def _case(c: Any) -> dict[str, Any]:
    graph = (c.graph_verify or {}).get("metrics") or {}
    metrics = c.metrics or {}
    cost = c.cost_model
    return {"verdict": c.verdict, "max_abs_diff": metrics.get("max_abs_diff"),
            "graph_max_abs_diff": graph.get("max_abs_diff"),
            "aicore_us": cost.aicore_time_us if cost else None, "cycles": cost.total_cycles if cost else None}


def skip(sha: str, reason: str, code: int) -> search.Step:
    return search.Step(sha, search.SKIP, "skipped", reason, reason=reason, exit_code=code)


def _print_step(tag: str, step: search.Step) -> None:
    """One line: which revision, run or reused (the revision it reuses is in --json) or skipped, and why;
    for a run on the service, the job that ran it (a reused step names the job it reuses)."""
    job = f" [{step.job}]" if step.job else ""
    print(f"[{tag}] {step.sha[:10]} {step.how:<7} {step.summary}{job}", flush=True)


def _finish(args: argparse.Namespace, top: Path, outcome: search.Outcome, premises: list[search.Step]) -> int:
    runs = sum(1 for s in outcome.steps if s.how == "run")
    result: dict[str, Any] = {"operator": args.op, "mode": args.mode, "metric": args.metric,
                              "threshold": args.threshold if args.metric == "aicore_us" else None,
                              "good": premises[0].sha,
                              "bad": premises[1].sha, "last_good": outcome.last_good.sha,
                              "premises": [_step_json(s) for s in premises],
                              "steps": [_step_json(s) for s in outcome.steps], "runs_in_search": runs}
    if outcome.first_bad is None:
        skipped = [s for s in outcome.steps if s.how == "skipped"]
        infra = any(s.exit_code == exit_codes.INFRA for s in skipped)
        print("only skipped revisions are left: the first bad commit is one of", flush=True)
        for sha in outcome.undecided:
            print(f"  {sha} {git.subject(top, sha)}")
        result.update(first_bad_commit=None, undecided=outcome.undecided)
        _write_json(args, result)
        return exit_codes.INFRA if infra else exit_codes.UNUSABLE
    bad = outcome.first_bad
    subject = git.subject(top, bad.sha)
    perf = args.metric == "aicore_us"
    changed = (metric.changed_cases(premises[0], bad, args.threshold) if perf
               else search.changed_cases(outcome.last_good, bad))
    touched = sorted(set(git.changed_files(top, bad.sha)) & set(bad.files))
    print(f"first bad commit: {bad.sha} {subject}")
    print(f"before ({outcome.last_good.sha[:10]}): {outcome.last_good.summary}")
    print(f"after  ({bad.sha[:10]}): {bad.summary}")
    if perf:
        print(f"cases {args.threshold:.0%} or more slower than --good ({premises[0].sha[:10]}):")
        for row in changed:
            print(f"  {row['case']}: {row['before_us']:.4g} -> {row['after_us']:.4g} AICore µs ({row['rise']:+.0%})")
    else:
        print("cases that changed:" if changed else "cases that changed: none by verdict")
        for row in changed:
            print(f"  {row['case']}: {_verdict(row['before'])} -> {_verdict(row['after'])}")
    print("operator files the commit changed:" if touched else
          "operator files the commit changed: none (nothing its job reads: docs/bisect.md §3)")
    for name in touched:
        print(f"  {name}")
    result.update(first_bad_commit=bad.sha, subject=subject, before=_step_json(outcome.last_good),
                  after=_step_json(bad), changed_cases=changed, changed_files=touched)
    _write_json(args, result)
    return exit_codes.OK


def _verdict(case: dict[str, Any]) -> str:
    if not case:
        return "(absent)"
    diff = case.get("graph_max_abs_diff") if case.get("graph_max_abs_diff") is not None else case.get("max_abs_diff")
    return case["verdict"] + (f" (max |diff| {diff:.3g})" if isinstance(diff, (int, float)) else "")


def _step_json(step: search.Step) -> dict[str, Any]:
    data = asdict(step)
    data.pop("files", None)
    return data


def _write_json(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json is None:
        return
    text = json.dumps(result, indent=1)
    if str(args.json) == "-":
        sys.stdout.write(text + "\n")
    else:
        args.json.write_text(text)
