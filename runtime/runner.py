"""Run one submission on this host: syntax, lint, then one sandboxed job per case."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from runtime.modes import MODES
from runtime.intake import submission as submission_mod
from runtime.intake.cases import check_memory
from runtime.errors import NO_NPU_MESSAGE, HostError, SubmissionError
from runtime.devices.host import choose_device, environment, npu_fingerprint, npu_status
from runtime.devices import pypto_api
from runtime.lint import lint_files
from runtime.report import ErrorInfo, Report, Stage, Submission
from runtime.fence.scratch import RUN_PREFIX, OwnedDir
from runtime.warm import WarmParent
# RunOptions is the runner's public name (the CLI, the worker and the benches import it from here); it
# lives with the case runner that reads it.
from runtime.case_runner import CaseCallback, CaseRunner, RunOptions  # noqa: F401

STANDIN_NOTE = "stand-in: PTO Crosscheck's CPU torch_npu for SIM (docs/realops.md §2)"


def run_submission(path: Path, options: RunOptions, warm: WarmParent | None = None,
                   on_case: CaseCallback | None = None,
                   loaded: submission_mod.Submission | None = None) -> Report:
    """Verify the submission at `path` (or `loaded`, an operator found in a checkout).

    Raises SubmissionError or HostError for unusable input."""
    start = time.perf_counter()
    if options.mode not in MODES:
        raise SubmissionError(f"unknown mode {options.mode!r}; use sim or npu")
    npu: dict[str, Any] = {}
    if options.mode == "npu":
        available, why = npu_status()
        if not available:
            raise HostError(f"{NO_NPU_MESSAGE} ({why})")
        choice = choose_device(options.device_id)
        options = dataclasses.replace(options, device_id=choice.id)
        npu = npu_fingerprint(choice)
    if options.work_dir:
        work = Path(options.work_dir)
        work.mkdir(parents=True, exist_ok=True)
        work.chmod(0o755)
        return _run_in(work, path, options, warm, on_case, npu, start, loaded)
    # Our own temp work dir goes on every way out (a few runs left gigabytes behind), unless kept.
    # It is locked by this process, so a run killed mid-way leaves it for the next one to sweep (runtime/fence/scratch.py).
    owned = OwnedDir(RUN_PREFIX)
    work = owned.path
    work.chmod(0o755)
    try:
        return _run_in(work, path, options, warm, on_case, npu, start, loaded)
    finally:
        if options.keep_work:
            owned.disown()
        else:
            owned.cleanup()


def _run_in(work: Path, path: Path, options: RunOptions, warm: WarmParent | None, on_case: CaseCallback | None,
            npu: dict[str, Any], start: float, loaded: submission_mod.Submission | None) -> Report:
    sub = loaded or submission_mod.load(Path(path), work)
    _check_case_filter(sub, options.cases)
    if sub.case_file is not None:
        check_memory(sub.case_file, options.memory_bytes)
    _check_pypto(options.pypto, sub.case_file.requires_pypto if sub.case_file else None)
    syntax_stage, syntax_errors = _syntax(sub)
    lint_start = time.perf_counter()
    api = pypto_api.load(options.cache_dir)  # None without pypto: the version-skew rules are skipped
    findings = lint_files([sub.root / f for f in sub.python_files], sub.root, api)
    api_note = f"checked against pypto {api.version}'s API" if api else "pypto's API unavailable: names not checked"
    lint_stage = Stage("lint", "ok", round(time.perf_counter() - lint_start, 4),
                       f"{len(findings)} finding(s); {api_note}")
    report = Report(
        submission=Submission(kind=sub.kind, name=sub.name, sha256=sub.sha256, files=sub.files),
        mode=options.mode, environment=environment(device=_device_name(options), npu=npu), lint=findings,
    )
    if sub.kind == "script" and warm is not None and not warm.runs_scripts:
        warm = None  # the run daemon's parent silences pypto's simulator files, which a script may read
    own_warm = warm is None
    runner = CaseRunner(sub, options, work, findings, [syntax_stage, lint_stage])
    runner.test_double = bool(npu.get("test_double"))
    try:
        if syntax_errors:
            report.cases = runner.syntax_failures(syntax_errors)
        else:
            # A script reads pypto's simulator files as a plain run leaves them (docs/realops.md §9).
            warm = warm or WarmParent(options.mode, stock_simulator=sub.kind == "script")
            runner.warm = warm
            # A cancel that arrived while the submission was loaded and linted stops it here.
            report.cases, report.cancelled = ([], True) if getattr(warm, "cancelled", False) else \
                runner.run_all(runner.case_list(), on_case)
            report.submission.cases_from = runner.cases_from
            report.environment.sandbox = runner.sandbox_info or {}
            report.environment.sandbox["memory_limit_gib"] = round(options.memory_bytes / 2**30, 2)
            if options.memory_from:
                report.environment.sandbox["memory_limit_from"] = options.memory_from
            if runner.standin_used:
                report.environment.torch_npu = STANDIN_NOTE
    finally:
        if own_warm and warm is not None:
            warm.close()
    report.duration_s = round(time.perf_counter() - start, 4)
    return report


def _device_name(options: RunOptions) -> str | None:
    """The card an NPU run used, as the report's provenance names it; SIM runs on no device."""
    return f"npu:{options.device_id or 0}" if options.mode == "npu" else None


def _check_pypto(asked: str | None, required: str | None) -> None:
    """Refuse a run that asks for a pypto this host does not have (before anything runs)."""
    if asked and required and asked != required:
        raise SubmissionError(f"--pypto {asked} contradicts test_cases.json's requires_pypto {required}")
    wanted = asked or required
    installed = pypto_api.installed_version()
    if wanted and wanted != installed:
        raise HostError(f"the submission asks for pypto {wanted}; this host has pypto {installed or 'not installed'} "
                        f"(submit it to a service with a pypto {wanted} worker: crosscheck submit --pypto {wanted}; "
                        "docs/versions.md)")


def _check_case_filter(sub: submission_mod.Submission, wanted: list[str]) -> None:
    if not wanted or sub.case_file is None:
        return
    known = [c.id for c in sub.case_file.cases]
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise SubmissionError(f"unknown case id(s) {', '.join(unknown)}; known: {', '.join(known)}")


def _syntax(sub: submission_mod.Submission) -> tuple[Stage, list[ErrorInfo]]:
    start = time.perf_counter()
    errors = []
    for rel in sub.python_files:
        source = (sub.root / rel).read_bytes()
        try:
            compile(source, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            errors.append(ErrorInfo(type=type(exc).__name__, message=f"{rel}:{exc.lineno}: {exc.msg}",
                                    file=rel, line=exc.lineno or 0))
        except ValueError as exc:  # e.g. null bytes
            errors.append(ErrorInfo(type="SyntaxError", message=f"{rel}: {exc}", file=rel))
    status = "error" if errors else "ok"
    return Stage("syntax", status, round(time.perf_counter() - start, 4)), errors


