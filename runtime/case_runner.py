"""Each case of one submission through its sandboxed job: find the cases, prepare their requests, run them
through the warm parent (up to options.parallel at once), judge each, and rerun where the evidence asks for it
(plain SIM after a graph-verify failure, the emulated NPU branch). runtime.runner calls it once per submission."""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from runtime.intake import submission as submission_mod
from runtime.evidence import emulated
from runtime.intake import listing
from runtime.evidence import graph_verify
from runtime.intake import testmodule
from runtime.intake.testmodule import SkippedFunction, TestFunction
from runtime import verdicts
from runtime.judge import kernelbench
from runtime.fence.host_memory import runs_alone
from runtime.intake.cases import CaseSpec, case_bytes
from runtime.intake.dtypes import default_tolerance
from runtime.fence.jobenv import JobDirs, job_environment
from runtime.fence.jobfiles import JobFiles
from runtime.lint import GOLDEN_FALLBACK, VERSION_SKEW_RULES, vec_tile_plans
from runtime.judge import pitfalls
from runtime.judge.outcome import JobContext, build
from runtime.judge import labels
from runtime.judge import run_options
from runtime.judge.reruns import label_test_double, memory_of_graph_verify
from runtime.report import CaseResult, Diagnosis, ErrorInfo, LintFinding, Stage
from runtime.fence.sandbox import Limits
from runtime.warm import WarmParent


DEFAULT_TIMEOUT_S = 300.0


LIST_OUTPUT_BYTES = 1024 * 1024  # the tail of a `--list` run's stdout (and stderr) searched for case ids


MAIN_CASE = "main"


@dataclass
class RunOptions:
    mode: str = "sim"
    cases: list[str] = field(default_factory=list)
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = Limits.memory_bytes  # per case, its real memory (runtime.fence.sandbox.Limits)
    memory_from: str = ""  # how memory_bytes was chosen ("50% of the host's 23.5 GiB"); stated in the report
    nproc: int = Limits.nproc  # per case, processes and threads
    disk_bytes: int = Limits.disk_bytes  # per case, its job dir
    # How the caller's users raise each limit ("memory" -> "--memory GIB"), named in resource_limit verdicts.
    limit_flags: dict[str, str] = field(default_factory=dict)
    hide_paths: list[Path] = field(default_factory=list)  # host paths no job may see (a service's data)
    work_dir: Path | None = None
    device_id: int | None = None
    graph_verify: bool = True
    verify_passes: bool = False
    graph_slice_bytes: int | None = None  # graph bytes above which a launch runs on row slices; None: memory / 4
    # ... of which at most this many are launched (runtime.evidence.slice_sample); None: as many as time allows
    graph_slice_count: int | None = None
    isolate_network: bool = True
    drop_privileges: bool = True
    nice: int = 0  # each case's CPU niceness (runtime.fence.sandbox.Limits.nice)
    cache_dir: Path | None = None  # where the graph-verify calculator is cached
    parallel: int = 1  # cases run at once (each its own sandboxed fork)
    keep_work: bool = False  # keep the temp work dir (without work_dir); a given work_dir is always kept
    pypto: str | None = None  # the pypto version asked for: refused unless it is this host's (docs/versions.md §3)


# Called after each case with (case, done, total); returning False stops the run (cancel).
CaseCallback = Callable[[CaseResult, int, int], "bool | None"]


class CaseRunner:
    def __init__(self, sub: submission_mod.Submission, options: RunOptions, work: Path,
                 findings: list[LintFinding], shared_stages: list[Stage]):
        self.sub = sub
        self.options = options
        self.work = work
        self.shared_stages = shared_stages
        self.golden_fallback = any(f.rule == GOLDEN_FALLBACK for f in findings)
        self.skew_findings = [f for f in findings if f.rule in VERSION_SKEW_RULES]
        self.findings = findings
        self.tile_plans = vec_tile_plans([sub.root / f for f in sub.python_files], sub.root)
        self.warm: WarmParent | None = None
        self.sandbox_info: dict[str, Any] | None = None
        self.standin_used = False  # a SIM case imported the torch_npu stand-in (runtime.devices.standin)
        self.list_run: tuple[JobContext, dict[str, Any]] | None = None  # a `--list` ask that ran the script whole
        self.list_printed = False  # that `--list` printed something on stdout
        self.test_double = False  # NPU runs on our tests' torch_npu double: no precision evidence
        self._count = 0
        self.cases_from = ""  # set by case_list()

    def syntax_failures(self, errors: list[ErrorInfo]) -> list[CaseResult]:
        first = errors[0]
        diag = Diagnosis(rule="python-syntax-error", cause=f"Python cannot parse {first.file}: {first.message}",
                         fix="Fix the syntax error at the line shown; the kernel never ran.", sim_only=False,
                         stage="syntax", evidence=first.message, origin="exception", file=first.file,
                         line=first.line)
        ids = [c.id for c in self.sub.case_file.cases] if self.sub.case_file else (self.options.cases or [MAIN_CASE])
        if self.options.cases:
            ids = [i for i in ids if i in self.options.cases] or self.options.cases
        return [CaseResult(operator=self.sub.name, case=i, structural="error", stage="syntax", error=first,
                           diagnosis=[diag], verdict="structural_error",
                           verdict_reason="a submission file has a Python syntax error",
                           stages=list(self.shared_stages)) for i in ids]

    def case_list(self) -> list[Any]:
        """The cases to run; `cases_from` says how they were found (the report header shows it)."""
        cases, self.cases_from = self._find_cases()
        return cases

    def _find_cases(self) -> tuple[list[Any], str]:
        if self.sub.case_file is not None:
            cases = self.sub.case_file.cases
            return ([c for c in cases if not self.options.cases or c.id in self.options.cases],
                    "the KernelBench task" if self.sub.task else "test_cases.json")
        assert self.sub.script is not None
        path = self.sub.root / self.sub.script
        functions = [] if testmodule.answers_list(path) else testmodule.test_functions(path)
        if functions:  # a test module: each item pytest collects is a case (docs/realops.md §4)
            return self._module_items(functions, testmodule.skip_marks(path)), "pytest items"
        if self.options.cases:
            return list(self.options.cases), "--case"
        if not testmodule.answers_list(path) and testmodule.strict_argparse(path):
            return [MAIN_CASE], "the script whole"  # its argparse would exit 2 on `--list` or a guessed id
        listed = self._discover_script_cases()
        if listed:
            return listed, "--list"
        if self.list_run is not None or self.list_printed:
            # A listing printed in a form we cannot read ("1. description"): run whole, not guess arguments.
            return [MAIN_CASE], "the script whole"
        # `--list` exited cleanly and printed nothing (it logs where we cannot read): the gym convention of
        # `test_x.py CASE_ID` with the ids of the test_cases.json beside it, as discovery lists them.
        beside = self._beside_case_ids()
        return (beside, "test_cases.json beside") if beside else ([MAIN_CASE], "the script whole")

    def _module_items(self, functions: list[str], marks: dict[str, str]) -> list[Any]:
        """Ask pytest, in a job like any case's, for the module's items (runtime/job/pytest_run.py)."""
        request, dirs = self._request(f"collect-{self.sub.name}", self.options.timeout_s)
        request.update(kind="module", script=self.sub.script, function=None, collect=True, script_args=[])
        request["graph_verify"]["enabled"] = False  # nothing runs
        _script_dir_writable(request, dirs, self.sub.script)
        assert self.warm is not None
        events = self.warm.run_job(request).get("events", [])
        return testmodule.cases_of(events, functions, self.options.cases, marks)

    def _discover_script_cases(self) -> list[str]:
        """Ask the script for its case ids (`--list`, the hicann/pypto examples convention).

        The ask is a job like any case, with the case's limits. A script that ignores `--list` runs
        whole in it (it launched a kernel, failed, or timed out): that run is then the script's one
        case, not repeated (its side effects, once). A clean exit that launched nothing and listed
        nothing: the ids of test_cases.json beside it, else the script runs once more, whole.
        """
        request, dirs = self._request(f"list-{self.sub.name}", self.options.timeout_s)
        request.update(kind="script", script=self.sub.script, script_args=["--list", *self._mode_args()])
        _script_dir_writable(request, dirs, self.sub.script)
        assert self.warm is not None
        result = self.warm.run_job(request)
        launched = any(e.get("event") == "launch_start" for e in result.get("events", []))
        if result.get("cancelled"):
            return []
        if launched or result.get("exit_code") != 0:
            self.list_run = (self._script_context(MAIN_CASE, dirs), result)
            return []
        folder = (result.get("evidence") or {}).get("dir")
        # `logging.basicConfig` writes to stderr: a listing logged with `LOGGER.info("ID: %s", ...)` is there.
        stdout, stderr = (JobFiles(folder).text_tail(name, LIST_OUTPUT_BYTES) if folder else ""
                          for name in ("stdout.txt", "stderr.txt"))
        self.list_printed = bool(stdout.strip())
        text = f"{stdout}\n{stderr}"
        ids = listing.case_ids(text) or [i for i in self._beside_case_ids() if listing.listed(i, text)]
        return list(dict.fromkeys(ids))

    def _beside_case_ids(self) -> list[str]:
        """Case ids of a test_cases.json beside the script: gym scripts list them in their own format."""
        assert self.sub.script is not None
        path = self.sub.root / Path(self.sub.script).parent / "test_cases.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return [str(c["id"]) for c in raw["test_cases"] if isinstance(c, dict) and "id" in c]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def _request(self, label: str, timeout_s: float) -> tuple[dict[str, Any], JobDirs]:
        self._count += 1
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:60]
        dirs = JobDirs(self.work / "jobs" / f"{self._count:03d}-{safe}").create()
        submission_mod.copy_into(self.sub, dirs.src)
        for p in [dirs.root, dirs.src, *dirs.src.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        assert self.warm is not None
        limits = Limits(timeout_s=timeout_s, memory_bytes=self.options.memory_bytes, nproc=self.options.nproc,
                        disk_bytes=self.options.disk_bytes, isolate_network=self.options.isolate_network,
                        drop_privileges=self.options.drop_privileges, nice=self.options.nice)
        request = {
            "job_dir": str(dirs.root), "src_dir": str(dirs.src), "work_dir": str(dirs.work),
            "log_dir": str(dirs.logs), "stdout_path": str(dirs.stdout), "stderr_path": str(dirs.stderr),
            "results_dir": str(dirs.results),
            # Outside the job dir, owned by the harness alone (runtime.evidence.evidence).
            "evidence_dir": str(self.work / "evidence" / dirs.root.name),
            "writable_dirs": [str(d) for d in dirs.writable()],
            "mode": self.options.mode, "device_id": self.options.device_id,
            "env": job_environment(dirs, self.options.mode, self.warm.config_path, self.options.device_id),
            "limits": limits.__dict__,
            "limit_flags": dict(self.options.limit_flags),
            "hide_paths": [str(p) for p in self.options.hide_paths],
            "graph_verify": self._graph_verify_config(),
        }
        return request, dirs

    def _graph_verify_config(self) -> dict[str, Any]:
        enabled = self.options.graph_verify and self.options.mode == "sim"
        cut = self.options.graph_slice_bytes  # docs/pypto.md §10
        return {"enabled": enabled, "verify_passes": self.options.verify_passes,
                "cache_dir": str(self.options.cache_dir) if self.options.cache_dir else None,
                "slice_budget_bytes": self.options.memory_bytes // 4 if cut is None else cut,
                "slice_count": self.options.graph_slice_count}

    def _jobs(self, specs: list[Any], requests: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
        """The cases up to options.parallel at once, then those too large to share the host one at a time
        (runtime/fence/host_memory.py); yields (index in specs, the leader's report)."""
        parallel = self.options.parallel
        alone = {i for i, spec in enumerate(specs) if isinstance(spec, CaseSpec)
                 and runs_alone(case_bytes(spec), self.options.memory_bytes, parallel)}
        for indexes, at_once in (([i for i in range(len(specs)) if i not in alone], parallel), (sorted(alone), 1)):
            if not indexes:
                continue
            inner = self.warm.run_jobs([requests[i] for i in indexes], at_once)  # type: ignore[union-attr]
            try:
                for k, raw in inner:
                    yield indexes[k], raw
            finally:
                inner.close()

    def run_all(self, specs: list[Any], on_case: CaseCallback | None) -> tuple[list[CaseResult], bool]:
        """Run every case, up to options.parallel at once; results in spec order, and whether stopped.
        Functions marked skip are reported first, without a job."""
        marked = [(i, s) for i, s in enumerate(specs) if isinstance(s, SkippedFunction)]
        if not marked:
            return self._run_jobs(specs, on_case)
        total = len(specs)
        results: dict[int, CaseResult] = {}
        for done, (index, spec) in enumerate(marked, 1):
            results[index] = self._skipped(spec)
            if on_case and on_case(results[index], done, total) is False:
                return [results[i] for i in sorted(results)], True
        rest = [i for i in range(total) if i not in results]

        def counted(case: CaseResult, done: int, _total: int) -> bool | None:
            return on_case(case, done + len(marked), total) if on_case else None

        ran, stopped = self._run_jobs([specs[i] for i in rest], counted) if rest else ([], False)
        by_case = {c.case: c for c in ran}
        results.update({i: by_case[specs[i].name] for i in rest if specs[i].name in by_case})
        return [results[i] for i in sorted(results)], stopped

    def _skipped(self, spec: SkippedFunction) -> CaseResult:
        why = f" ({spec.reason})" if spec.reason else ""
        reason = f"{spec.reason}: not run, as pytest would not" if spec.reason.startswith("pytest ") else \
            f"marked skip by the test{why}: not run, as pytest would not; run it with --case {spec.name}"
        return CaseResult(operator=self.sub.name, case=spec.name, structural="not_run", stage=verdicts.SKIPPED_STAGE,
                          verdict=verdicts.NOT_RUN, stages=list(self.shared_stages), verdict_reason=reason)

    def _run_jobs(self, specs: list[Any], on_case: CaseCallback | None) -> tuple[list[CaseResult], bool]:
        assert self.warm is not None
        jobs: Iterator[tuple[int, dict[str, Any]]]
        prepared: list[tuple[JobContext, dict[str, Any]]]
        if self.list_run is not None and specs == [MAIN_CASE]:  # the script already ran whole (--list ignored)
            prepared, jobs = [(self.list_run[0], {})], iter([(0, self.list_run[1])])
        else:
            prepared = []
            for spec in specs:  # a cancel stops the preparing too: each case makes its job dirs and copies
                if getattr(self.warm, "cancelled", False):
                    return [], True
                prepared.append(self._prepare(spec))
            jobs = self._jobs(specs, [request for _, request in prepared])
        results: list[CaseResult | None] = [None] * len(specs)
        recheck: list[int] = []
        done = 0
        stopped = False
        try:
            for index, raw in jobs:
                if raw.get("cancelled"):  # killed mid-case on a cancel: no verdict, and nothing more runs
                    stopped = True
                    break
                case = self._build(prepared[index][0], raw)
                results[index] = case
                if self._needs_plain_rerun(specs[index], case) or self._wants_emulation(specs[index], case):
                    recheck.append(index)  # after the parallel run: one job at a time from here
                    continue
                done += 1
                if on_case and on_case(case, done, len(specs)) is False:
                    stopped = True
                    break
        except BaseException:
            cancel = getattr(self.warm, "cancel", None)
            if cancel is not None:
                cancel()  # interrupted here (SIGTERM, an error): stop the jobs in flight, do not wait them out
            raise
        finally:
            close = getattr(jobs, "close", None)
            if close is not None:
                close()  # waits for the jobs still in flight
        stopped = stopped or bool(getattr(self.warm, "cancelled", False))
        for index in [] if stopped else recheck:
            results[index] = self._recheck(specs[index], prepared[index][0], results[index])
            done += 1
            if on_case and on_case(results[index], done, len(specs)) is False:
                stopped = True
                break
        finished = [c for c in results if c is not None]
        return finished, stopped and len(finished) < len(specs)

    def _prepare(self, spec: Any) -> tuple[JobContext, dict[str, Any]]:
        if isinstance(spec, TestFunction):
            return self._script_job(spec.name, function=spec.name)
        if isinstance(spec, str):
            return self._script_job(spec)
        return self._package_job(spec)

    @staticmethod
    def _needs_plain_rerun(spec: Any, case: CaseResult) -> bool:
        gv = case.graph_verify or {}
        return (case.structural == "error" and bool(gv.get("active"))) or bool(gv.get("memory_limit"))

    def _package_job(self, case: Any) -> tuple[JobContext, dict[str, Any]]:
        request, dirs = self._package_request(case, f"{self.sub.name}-{case.id}")
        ctx = JobContext(operator=self.sub.name, case=case.id, mode=self.options.mode, dirs=dirs,
                         description=case.description, shapes=[i.shape for i in case.inputs],
                         dtypes=[i.dtype for i in case.inputs], golden_fallback=self.golden_fallback,
                         compare=case.compare, max_mismatch_ratio=case.max_mismatch_ratio,
                         memory_bytes=self.options.memory_bytes, timeout_s=self.options.timeout_s,
                         skew_findings=self.skew_findings)
        return ctx, request

    def _package_request(self, case: Any, label: str) -> tuple[dict[str, Any], JobDirs]:
        request, dirs = self._request(label, self.options.timeout_s)
        out_dtype = (case.outputs[0].get("dtype") if case.outputs else None) or \
            (case.inputs[0].dtype if case.inputs else "float32")  # a KernelBench task names its tolerance
        rtol_default, atol_default = default_tolerance(out_dtype)
        tolerance = (case.rtol if case.rtol is not None else rtol_default,
                     case.atol if case.atol is not None else atol_default)
        assert self.sub.impl and self.sub.golden
        request.update(
            kind="package",
            impl={"file": self.sub.impl.file, "function": self.sub.impl.function}, sys_path=self.sub.sys_path,
            golden={"file": self.sub.golden.file, "function": self.sub.golden.function},
            case={"id": case.id, "seed": case.seed, "params": case.params, "outputs": case.outputs,
                  "inputs": [i.__dict__ for i in case.inputs], "output_args": case.output_args,
                  "timing": dataclasses.asdict(case.timing) if case.timing else None},
            tolerance=list(tolerance), task=self.sub.task,
        )
        request["graph_verify"]["verify_passes"] = self.options.verify_passes or case.verify_passes
        return request, dirs

    def _recheck(self, spec: Any, ctx: JobContext, case: CaseResult) -> CaseResult:
        if self._wants_emulation(spec, case):
            return self._emulated_npu_branch(spec, ctx, case)
        return self._without_graph_verify(spec, ctx, case)

    def _wants_emulation(self, spec: Any, case: CaseResult) -> bool:
        if not isinstance(spec, (str, TestFunction)) or self.sub.script is None:
            return False
        return emulated.wanted(case, self.sub.root / self.sub.script, isinstance(spec, TestFunction),
                               self.options.mode, self._graph_verify_config()["enabled"])

    def _emulated_npu_branch(self, spec: Any, ctx: JobContext, sim: CaseResult) -> CaseResult:
        """The script compared nothing in SIM: run its NPU branch emulated on the CPU (runtime/evidence/emulated.py)."""
        assert self.sub.script is not None
        run_ctx, request = self._prepare(spec)
        emulated.prepare(request, self.sub.root / self.sub.script, isinstance(spec, TestFunction))
        return emulated.merge(sim, self._finish(JobContext(**{**ctx.__dict__, "dirs": run_ctx.dirs}), request))

    def _without_graph_verify(self, case: Any, ctx: JobContext, failed: CaseResult) -> CaseResult:
        """The kernel failed with graph verify on: run plain SIM to see whose failure it was.

        Retrying in the same process is not possible: pypto then reports "function nested".
        """
        if isinstance(case, (str, TestFunction)):
            plain_ctx, request = self._prepare(case)
            dirs = plain_ctx.dirs
        else:
            request, dirs = self._package_request(case, f"{self.sub.name}-{case.id}-plain")
        request["graph_verify"]["enabled"] = False
        plain = self._finish(JobContext(**{**ctx.__dict__, "dirs": dirs}), request)
        if plain.sim_gap:
            plain.graph_verify = {"status": "unavailable", "metrics": None,
                                  "reason": f"SIM stops before graph verify can judge: {plain.sim_gap}"}
            return plain
        if (failed.graph_verify or {}).get("memory_limit"):
            return memory_of_graph_verify(plain, failed)
        if plain.verdict in ("structural_error", "crash", "timeout", "resource_limit"):
            plain.graph_verify = {"status": "unavailable", "metrics": None,
                                  "reason": "the kernel fails to compile or run with and without graph verify"}
            return plain
        texts = [failed.error.message if failed.error else "", *(launch.error for launch in failed.launches)]
        plain.graph_verify = graph_verify.failure(failed.error.__dict__ if failed.error else None, texts)
        return plain

    def _script_job(self, case_id: str, function: str | None = None) -> tuple[JobContext, dict[str, Any]]:
        request, dirs = self._request(f"{self.sub.name}-{case_id}", self.options.timeout_s)
        args = [] if case_id == MAIN_CASE or function else [case_id]
        request.update(kind="module" if function else "script", function=function, script=self.sub.script,
                       script_args=[*args, *self._mode_args()], force=bool(self.options.cases))
        _script_dir_writable(request, dirs, self.sub.script)
        return self._script_context(case_id, dirs), request

    def _mode_args(self) -> list[str]:
        """`--run_mode MODE` for a script that takes it; a script without the option would reject it."""
        assert self.sub.script is not None
        return testmodule.run_mode_args(self.sub.root / self.sub.script, self.options.mode)

    def _script_context(self, case_id: str, dirs: JobDirs) -> JobContext:
        return JobContext(operator=self.sub.name, case=case_id, mode=self.options.mode, dirs=dirs,
                          is_script=True, golden_fallback=self.golden_fallback,
                          memory_bytes=self.options.memory_bytes, timeout_s=self.options.timeout_s,
                          skew_findings=self.skew_findings)

    def _finish(self, ctx: JobContext, request: dict[str, Any]) -> CaseResult:
        assert self.warm is not None
        return self._build(ctx, self.warm.run_job(request))

    def _build(self, ctx: JobContext, report: dict[str, Any]) -> CaseResult:
        assert self.warm is not None
        if self.sandbox_info is None:
            self.sandbox_info = report.get("isolation")
        if any(isinstance(e, dict) and e.get("event") == "torch_npu" and e.get("standin") is True
               for e in report.get("events", [])):
            self.standin_used = True
        case = pitfalls.annotate(build(ctx, report), self.findings, ctx.mode, self.tile_plans)
        labels.add(case, report.get("events", []))
        run_options.judge(case, report.get("events") or [], ctx.mode)  # options that skip work (S8)
        case.stages = [*self.shared_stages, *case.stages]
        if self.sub.task:
            kernelbench.judge(case, report.get("events") or [])  # the gym's cheat rules (docs/kernelbench.md §3)
        if self.test_double:
            label_test_double(case)
        return case


def _script_dir_writable(request: dict[str, Any], dirs: JobDirs, script: str | None) -> None:
    """The job runs a script from its own folder (docs/realops.md §3); let it write there like in a checkout."""
    request["writable_dirs"].append(str(dirs.src / Path(script or ".").parent))
