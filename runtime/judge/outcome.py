"""Turn one job's raw report (events, exit status, files) into a CaseResult with a verdict."""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from runtime.evidence import calculator_limits, corroborate
from runtime.judge import envgap
from runtime import verdicts
from runtime.judge import degenerate, simgap, skew, verdict_diagnoses
from runtime.judge.diagnose import diagnose, is_user_file
from runtime.fence.jobenv import JobDirs
from runtime.devices.pypto_api import installed_version
from runtime.report import CaseResult, Diagnosis, ErrorInfo, Launch, LintFinding, Stage
from runtime.judge import readings
from runtime.judge.tolerance import RETURNED_COMPARE, assert_passed, within_tolerance

TAIL_CHARS = 8000
OOM_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")
# Nothing of the kernel could be judged: a test function needs an argument we do not supply
# (runtime.intake.testmodule), or the test called a torch_npu fused op the SIM stand-in cannot run (runtime.devices.standin).
NOT_RUN_ERRORS = ("CannotCall", "NeedsRealNpu", "NpuKernelMissing", *envgap.PYTEST_NOT_RUN)
NPU_ONLY_ERRORS = ("NeedsRealNpu", "NpuKernelMissing")  # cannot judge here (runtime.exit_codes: skipped)
# A job that ended this way never reached its script's compares (graph verify cannot say `no_compare`).
STOPPED = ("resource_limit", "timeout", "oom", "crash")


@dataclass
class JobContext:
    """What the runner knew when it sent the job."""
    operator: str
    case: str
    mode: str
    dirs: JobDirs
    description: str = ""
    shapes: list[list[int]] | None = None
    dtypes: list[str] | None = None
    is_script: bool = False
    golden_fallback: bool = False
    compare: str = "strict"
    max_mismatch_ratio: float = 0.005
    memory_bytes: int = 0
    timeout_s: float = 0.0
    skew_findings: list[LintFinding] | None = None  # the lint's version-skew findings (runtime.lint.api)


def _stages(events: list[dict[str, Any]]) -> tuple[list[Stage], dict[str, Any] | None, str]:
    stages: dict[str, Stage] = {}
    failed: dict[str, Any] | None = None
    last = ""
    for ev in events:
        if ev.get("event") != "stage":
            continue
        name, status = str(ev.get("name", ""))[:100], str(ev.get("status", ""))[:20]
        last = name
        if status == "start":
            stages[name] = Stage(name, "running")
        else:
            stage = stages.setdefault(name, Stage(name, status))
            stage.status = status
            stage.duration_s = round(readings.number(ev.get("duration_s")), 4)
            if status == "error":
                error = ev.get("error")
                failed = {"stage": name, **(error if isinstance(error, dict) else {})}
    return list(stages.values()), failed, last


def _exit_info(report: dict[str, Any], timeout_s: float) -> str:
    if report.get("timed_out"):
        return f"timeout after {timeout_s:g} s"
    sig = report.get("signal")
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"signal {sig} ({name})"
    code = report.get("exit_code")
    if code not in (0, None):
        return f"exit code {code}"
    return ""


def _structural(report: dict[str, Any], failed: dict[str, Any] | None, mode: str, texts: str,
                maxrss_bytes: int, memory_bytes: int, is_script: bool) -> str:
    if isinstance(report.get("resource_limit"), dict):  # the leader stopped it, or its cgroup did
        return "resource_limit"
    if report.get("timed_out"):
        return "timeout"
    died = report.get("signal") or (report.get("exit_code") not in (0, None) and not is_script)
    oom = any(m in texts for m in OOM_MARKERS) or (memory_bytes and maxrss_bytes >= 0.9 * memory_bytes)
    if (failed and failed.get("type") == "MemoryError") or (died and oom):
        return "oom"
    if died:
        return "crash"
    if failed and (failed["stage"] in ("golden", "device") or failed.get("type") in NOT_RUN_ERRORS):
        return "not_run"
    if failed and failed["stage"] in (mode, "compare"):
        return "error"
    return "ok"


def build(ctx: JobContext, report: dict[str, Any]) -> CaseResult:
    """One case's result. Job files are never opened here: the leader already copied and checked them."""
    events: list[dict[str, Any]] = [e for e in report.get("events", []) if isinstance(e, dict)]
    found: dict[str, Any] = report.get("evidence") or {}
    stages, failed, last_stage = _stages(events)
    launches = [readings.launch(e) for e in events if e.get("event") == "launch"]
    internal = next((e for e in events if e.get("event") == "internal_error"), None)
    if "leader_error" in report:
        internal = {"error": {"type": "LeaderError", "message": report["leader_error"],
                              "traceback": str(report.get("leader_traceback") or "")[-TAIL_CHARS:]}}
    stdout, stderr, plog = readings.read_logs(found)
    maxrss = int(report.get("maxrss_kb") or 0) * 1024
    structural = _structural(report, failed, ctx.mode, stderr + stdout, maxrss, ctx.memory_bytes, ctx.is_script)
    if internal and structural == "ok":
        structural = "crash"
    exit_info = _exit_info(report, ctx.timeout_s)
    limit_reason = str((report.get("resource_limit") or {}).get("reason", ""))[:500] if structural == "resource_limit" \
        else ""
    if limit_reason:
        exit_info = f"{limit_reason} ({exit_info})" if exit_info else limit_reason
    if structural == "oom":
        exit_info = (exit_info + f"; oom (peak RSS {maxrss / 2**30:.2f} GiB, limit "
                     f"{ctx.memory_bytes / 2**30:.2f} GiB)").lstrip("; ")
    error = None
    source = failed or (internal or {}).get("error") and {"stage": last_stage, **internal["error"]}
    if source:
        error = ErrorInfo(type=str(source.get("type", "")), message=str(source.get("message", "")),
                          file=str(source.get("file", "")), line=int(readings.number(source.get("line"))),
                          traceback=str(source.get("traceback", "")))
    elif exit_info:
        error = ErrorInfo(type="ResourceLimit" if limit_reason else "ProcessExit", message=exit_info)
    if error and not error.type and not error.message:  # a script caught its exception and printed the traceback
        printed = readings.last_exception(stderr + "\n" + stdout)
        error = ErrorInfo(type=printed[0], message=printed[1]) if printed else \
            ErrorInfo(type="ProcessExit", message=exit_info or "the script failed without an exception")
        error.file, error.line = readings.parser_location(stdout + "\n" + stderr, str(ctx.dirs.src))
    result_ev = next((e for e in events if e.get("event") == "result"), None)
    checked = corroborate.check(ctx.is_script, events, found, result_ev)
    metrics = checked.metrics
    # Pass/fail markers also where logging writes them (stderr: pypto configures the root logger).
    script = readings.script_evidence(events, f"{stdout}\n{stderr}") if ctx.is_script else None
    if script and script["asserts"] and metrics is None:
        metrics = readings.worst_assert(script["asserts"])
    after_launches = _raised_after_launches(failed, launches, structural)
    launches_ok = bool(launches) and not any(l.error for l in launches)
    graph = _script_graph(events, script, structural, failed if after_launches else None,
                          launches_ok and error is not None and error.type == "ProcessExit") \
        if script is not None else \
        _graph_verify(events, result_ev, ctx, checked)
    graph = _untrusted(graph, events)
    on = any(e.get("event") == "graph_verify_setup" and e.get("available") for e in events)
    if graph is not None and on and structural == "resource_limit" \
            and (report.get("resource_limit") or {}).get("limit") == "memory":
        graph["memory_limit"] = True  # the runner re-runs it without graph verify (case_runner._without_graph_verify)
    pypto_version = installed_version() or "not installed"
    skewed = None
    if structural == "error" or (ctx.is_script and exit_info):
        skewed = skew.detect(error, stderr + "\n" + stdout, ctx.skew_findings or [], pypto_version)
    gap = simgap.detect(f"{error.message if error else ''}\n{stderr}\n{stdout}") \
        if ctx.mode == "sim" and (structural in ("error", "not_run") or (ctx.is_script and exit_info)) else None
    if ctx.is_script:
        output_written = any(any(l.output_written) for l in launches) if launches else None
    elif graph and (graph.get("status") in ("pass", "fail") or graph.get("rule") in calculator_limits.RULES):
        # The graph run wrote the outputs; SIM itself has no data path (docs/pypto.md §2), as the raw
        # metrics taken from the pre-launch bytes confirm.
        output_written = False
    else:
        output_written = checked.output_written
    ev = verdicts.Evidence(
        mode=ctx.mode, structural=structural, golden_failed=bool(failed and failed["stage"] == "golden"),
        kernel_launches=checked.launches, launches_reported=len(launches), metrics=metrics,
        within_tolerance=within_tolerance(metrics, ctx.compare, ctx.max_mismatch_ratio) if metrics else None,
        output_written=output_written, golden_fallback=ctx.golden_fallback, is_script=ctx.is_script,
        exit_code=script["exit_code"] if script else None,
        asserts_passed=script["asserts_passed"] if script else 0,
        asserts_failed=script["asserts_failed"] if script else 0,
        asserts_failed_unwritten=script["asserts_failed_unwritten"] if script else 0,
        failed_type=str(failed.get("type", "")) if failed else "",
        raised_after_launches=after_launches,
        markers=script["markers"] if script else {},
        graph_status=graph.get("status") if graph else None,
        device_failed=bool(failed and failed["stage"] == "device"),
        contradictions=checked.contradictions, changed_after_launch=checked.changed_after_launch,
        version_skew=skewed.describe() if skewed else None,
        sim_gap=gap,
        resource_limit=limit_reason,
        graph_untrusted=str(graph.get("reason")) if graph and graph.get("rule") in calculator_limits.RULES else "",
        degenerate=degenerate.of_asserts(script["asserts"]) if script else degenerate.reason(metrics),
        launch_failed=any(l.error for l in launches), unlaunched_output=_unlaunched(result_ev),
    )
    verdict, precision, reason = verdicts.decide(ev)
    fail_stage = verdict_diagnoses.failed_stage(failed["stage"] if failed else None, last_stage, ctx.mode, graph,
                                                verdict)
    diagnoses: list[Diagnosis] = []
    if verdict not in ("pass", "sim_output_unwritten") or error is not None:
        diagnoses = diagnose(stage=fail_stage, mode=ctx.mode,
                             exception=f"{error.type}: {error.message}" if error else "",
                             stdout=stdout, stderr=stderr, plog=plog, exit_info=exit_info,
                             pypto_version=pypto_version)
        if error and error.file:
            for d in diagnoses:
                if not d.file:
                    d.file, d.line = error.file, error.line
        diagnoses = verdict_diagnoses.lead(diagnoses, verdict, fail_stage, ctx.golden_fallback, graph)
    verdict, reason, fail_stage = _not_the_kernels(verdict, reason, fail_stage, ev, error, ctx, checked.launches)
    if internal is not None and not ev.contradictions and verdict in (verdicts.CRASH, verdicts.STRUCTURAL_ERROR) \
            and _ours(report, events, internal):
        # Our own code raised (the job's harness, its leader): infrastructure, never the kernel's defect.
        verdict, fail_stage = verdicts.NOT_RUN, verdicts.HARNESS_STAGE
        reason = (f"the harness failed ({error.type if error else 'no report'}: "
                  f"{(error.message if error else '')[:300]}); nothing is known about the kernel: see the traceback")
    elif internal is not None and verdict == verdicts.CRASH:
        reason = (f"the job reported a harness failure after its kernel ran ({error.type if error else 'no report'}: "
                  f"{(error.message if error else '')[:300]}); the submission's code runs in that process and can "
                  "cause or forge one, so it counts as the kernel's")
    if fail_stage == envgap.STAGE and error is not None:
        diagnoses = [envgap.diagnosis(envgap.missing_package(error, ctx.dirs.src, 0), error)]
    return CaseResult(
        operator=ctx.operator, case=ctx.case, description=ctx.description,
        shapes=ctx.shapes if ctx.shapes is not None else (launches[0].arg_shapes if launches else []),
        dtypes=ctx.dtypes or [], structural=structural, stage=fail_stage, error=error, diagnosis=diagnoses,
        metrics=metrics, precision=precision, output_written=output_written, kernel_launches=checked.launches,
        cost_model=readings.cost_model(found) if ctx.mode == "sim" else None, verdict=verdict,
        verdict_reason=reason, duration_s=readings.number(report.get("wall_s")), stages=stages,
        launches=launches, script=script, graph_verify=graph, timing=readings.timing(events),
        outputs=_named_outputs(result_ev, checked),
        logs={"stdout": stdout[-TAIL_CHARS:], "stderr": stderr[-TAIL_CHARS:], "plog": plog[-TAIL_CHARS:]},
        job_dir=str(ctx.dirs.root), evidence_dir=str(found.get("dir") or ""), evidence=checked.summary(),
        version_skew=skewed.to_dict() if skewed and verdict == verdicts.VERSION_SKEW else None,
        sim_gap=gap if verdict == verdicts.SIM_UNSUPPORTED else None,
    )


def _ours(report: dict[str, Any], events: list[dict[str, Any]], internal: dict[str, Any]) -> bool:
    """Whether a harness failure is ours beyond doubt: the leader's own, or the job's before its kernel first ran.
    After a launch the job's report could be the submission's (it writes on the same pipe, and can make our code
    raise): a kernel defect then, so a gate counting defects cannot be dodged by claiming our failure
    (docs/SECURITY.md)."""
    if "leader_error" in report:
        return True
    for e in events:
        if e is internal:
            return True
        if e.get("event") in ("launch_start", "launch"):
            return False
    return True


def _not_the_kernels(verdict: str, reason: str, stage: str, ev: verdicts.Evidence, error: ErrorInfo | None,
                     ctx: JobContext, launches: int) -> tuple[str, str, str]:
    """A script case with no kernel to judge, or one this host's Python stopped: its own stage (runtime.exit_codes)."""
    if verdict == verdicts.NOT_RUN and ctx.is_script and ev.exit_code == 0 and error is None and launches == 0:
        return verdict, reason, verdicts.NO_KERNEL_STAGE  # ran cleanly, launched nothing
    if verdict == verdicts.NOT_RUN and error is not None and error.type == "CannotCall" and launches == 0:
        return verdict, f"{error.message}: its kernel never ran", verdicts.ARGUMENTS_STAGE
    if error is not None and error.type in envgap.PYTEST_NOT_RUN:  # pytest's own answer (runtime/job/pytest_run.py)
        return envgap.pytest_not_run(error)
    if verdict == verdicts.NOT_RUN and error is not None and launches == 0 and (
            error.type in NPU_ONLY_ERRORS or any(f"raised {t}" in error.message for t in NPU_ONLY_ERRORS)):
        # the golden (GoldenError wraps what it raised) or the test called a torch_npu op the stand-in cannot run
        return verdict, ("the golden or the test calls a torch_npu op only an NPU can compute: not judged on this "
                         "host; judge it on an NPU"), verdicts.NPU_ONLY_STAGE
    package = envgap.missing_package(error, ctx.dirs.src, launches) if ctx.is_script else None
    if package and verdict in (verdicts.STRUCTURAL_ERROR, verdicts.NOT_RUN):
        return verdicts.NOT_RUN, envgap.reason(package), envgap.STAGE
    return verdict, reason, stage


def _graph_verify(events: list[dict[str, Any]], result_ev: dict[str, Any] | None,
                  ctx: JobContext, checked: corroborate.Checked) -> dict[str, Any] | None:
    """graph_verify: {status: pass|fail|error|unavailable, metrics, duration_s, ...}.

    The metrics, whether the graph wrote the outputs and pypto's CSV verdicts are the harness's
    own (runtime.evidence.evidence) when it has them; the job's figures only where it has nothing else.
    """
    setup = next((e for e in events if e.get("event") == "graph_verify_setup"), None)
    if setup is None:
        return None
    if not setup.get("available"):
        return _unavailable(setup)
    gv = (result_ev or {}).get("graph_verify")
    gv = dict(gv) if isinstance(gv, dict) else {}
    if not gv:
        # "active": graph verify was on when the kernel failed; the runner re-runs plain SIM to tell
        # a graph-verify failure from a kernel failure.
        return {"status": "unavailable", "reason": "the kernel did not run to completion", "metrics": None,
                "active": True}
    if checked.rechecked:
        gv["metrics"], gv["output_written"] = checked.graph_metrics, checked.graph_written
    if checked.pypto_graph is not None:
        gv["pypto"] = checked.pypto_graph
    if gv.get("status") != "error":
        m = gv.get("metrics") or {}
        ok = within_tolerance(m, ctx.compare, ctx.max_mismatch_ratio) and gv.get("output_written")
        gv["status"] = "pass" if ok else "fail"
        if not gv.get("output_written"):
            gv["reason"] = "the tensor graph never wrote the output: the kernel does not assign its output argument"
        pypto_result = (gv.get("pypto") or {}).get("result")
        if pypto_result in ("pass", "fail") and pypto_result != gv["status"]:
            gv["disagreement"] = f"our compare says {gv['status']}, pypto's verify_result_brief.csv says {pypto_result}"
    passes = next((e for e in events if e.get("event") == "verify_passes"), None)
    if passes:
        gv["passes"] = {k: v for k, v in passes.items() if k != "event"}
        if checked.pypto_passes is not None and gv["passes"].get("status") in ("pass", "fail", "no_compare"):
            gv["passes"].update(checked.pypto_passes, status=checked.pypto_passes["result"])
    return gv


def _untrusted(graph: dict[str, Any] | None, events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Graph evidence of a kernel that builds a graph the calculator gets wrong: unsupported, what it said kept."""
    # Nothing judged on the graph's values (no compare, graph verify off or cut short): nothing to set aside.
    judged = graph and (graph.get("status") in ("pass", "fail") or graph.get("own_check"))
    if not judged:
        return graph
    return calculator_limits.set_aside(graph, events) or graph


def _raised_after_launches(failed: dict[str, Any] | None, launches: list[Launch], structural: str) -> bool:
    """The test's own code raised after its kernels ran: every launch returned, and the failing frame is the
    submission's (a check of its own, or a test error; not the kernel, whose launch would carry the error)."""
    return bool(structural == "error" and failed and launches and not any(l.error for l in launches)
                and failed.get("file") and is_user_file(str(failed["file"])))


# A failing assert's source that compares values (a tolerance, a max |diff|, torch.equal), as opposed to
# a check of the device, a shape or the environment, which says nothing about the kernel's maths.
_VALUE_CHECK = re.compile(r"allclose|isclose|assert_close|\bequal\(|abs\(|\.max\(|\bmax\(|diff|golden|expect"
                          r"|mismatch|\btol\b|rtol|atol")


def _compares_values(failure: dict[str, Any]) -> bool:
    """Whether the assert that failed compares values: its source line, read from the job's traceback."""
    name = PurePosixPath(str(failure.get("file") or "")).name
    if not name:
        return False
    frame = re.search(rf'File "[^"\n]*{re.escape(name)}", line {int(readings.number(failure.get("line")))}, in [^\n]*\n([^\n]*)',
                      str(failure.get("traceback") or ""))
    return bool(frame and _VALUE_CHECK.search(frame.group(1)))


def _script_graph(events: list[dict[str, Any]], script: dict[str, Any], structural: str,
                  own_failure: dict[str, Any] | None = None, clean_exit_after_launches: bool = False
                  ) -> dict[str, Any] | None:
    """Graph verify of a script or test module: its own asserts judged the graph's result (docs/realops.md §4).

    pass: every assert on a graph-written output passed; fail: one failed; no_compare: no assert
    looked at a kernel's output. Each judged assert keeps the metrics of the SIM garbage it replaced.
    """
    setup = next((e for e in events if e.get("event") == "graph_verify_setup"), None)
    if setup is None:
        return None
    if not setup.get("available"):
        return _unavailable(setup)
    judged = [a for a in script["asserts"] if isinstance(a.get("graph"), dict) and a["graph"].get("on_graph_result")]
    if not judged and own_failure:
        # The test judged the graph's CPU result with a check the harness cannot read (docs/realops.md §4).
        where = f"{own_failure.get('type') or 'an exception'} at {own_failure.get('file')}:{own_failure.get('line')}"
        if own_failure.get("type") == "AssertionError" and _compares_values(own_failure):
            return {"status": "fail", "metrics": None, "own_check": True,
                    "reason": f"the test's own assert failed ({where}) on the tensor graph's CPU result"}
        return {"status": "unavailable", "metrics": None, "own_check": True,
                "reason": f"the kernels ran; then the test's own code raised {where} with the tensor graph's CPU "
                          "result in their outputs: a failed check of its own or a test error, the harness cannot "
                          "tell which"}
    markers = script.get("markers") or {}
    if not judged and clean_exit_after_launches and markers.get("precision_fail") and not markers.get("precision_pass"):
        # Its kernels ran, no exception: the test printed its own fail marker on the graph's CPU result.
        return {"status": "fail", "metrics": None, "own_check": True,
                "reason": "the test printed [PRECISION_FAIL] after its kernels ran, on the tensor graph's CPU result"}
    if not judged and structural == "error":
        return {"status": "unavailable", "reason": "the script did not run to completion", "metrics": None,
                "active": True}
    if not judged and structural in STOPPED:  # stopped before it could compare: nothing known either way
        return {"status": "unavailable", "reason": f"the job was stopped ({structural}) before the script compared",
                "metrics": None}
    failed = [a for a in judged if not assert_passed(a.get("metrics") or {})]
    status = "fail" if failed else ("pass" if judged else "no_compare")
    worst = readings.worst_assert(failed or judged)
    gv: dict[str, Any] = {"status": status, "metrics": worst, "asserts_judged": len(judged),
                          "asserts_failed": len(failed),
                          "asserts": [{"index": a.get("index"), "api": a.get("api"),
                                       "passed": assert_passed(a.get("metrics") or {}),
                                       "kernel": a["graph"].get("kernel"),
                                       "sim_garbage": a["graph"].get("sim_garbage"),
                                       **_scalar(a)} for a in judged[:50]]}
    if status == "no_compare":
        gv["reason"] = "no assert of the script compared a kernel's output"
    returned = [a for a in failed if (a.get("metrics") or {}).get("kind") == RETURNED_COMPARE]
    if returned:
        m = returned[0]["metrics"]
        gv["reason"] = (f"the script's {returned[0].get('api')}(rtol={m.get('rtol')}, atol={m.get('atol')}) returned "
                        f"False on {returned[0]['graph'].get('kernel')}'s output (the tensor graph's CPU result)")
    bare = [a for a in failed if _scalar(a)]
    if bare:
        gv["reason"] = f"the script's assert {_scalar(bare[0])['compare']} failed on a float read from " \
                       f"{bare[0]['graph'].get('kernel')}'s output (the tensor graph's CPU result)"
    return gv


def _scalar(a: dict[str, Any]) -> dict[str, Any]:
    """A bare compare's measured value, as the assert read it (runtime/evidence/flow.py)."""
    m = a.get("metrics") or {}
    if m.get("kind") != "scalar_compare":
        return {}
    return {"compare": f"{m.get('value')} {m.get('op')} {m.get('bound')}", "where": m.get("where")}


def _unlaunched(result_ev: dict[str, Any] | None) -> bool:
    """The wrapper returned a tensor no launch was handed (runtime.job.provenance): never the kernel's."""
    origins = (result_ev or {}).get("provenance")
    return isinstance(origins, list) and any(isinstance(p, dict) and p.get("launch") is None for p in origins)


def _named_outputs(result_ev: dict[str, Any] | None, checked: corroborate.Checked) -> list[dict[str, Any]]:
    """Per-output metrics by name: the names the job gave, the numbers the harness recompared."""
    claimed = (result_ev or {}).get("outputs")
    names = [str(o.get("name", ""))[:200] for o in claimed if isinstance(o, dict)] if isinstance(claimed, list) else []
    return [{"name": names[i] if i < len(names) else f"output{i}", **o} for i, o in enumerate(checked.per_output)]


def _unavailable(setup: dict[str, Any]) -> dict[str, Any]:
    """Graph verify as the job's setup event left it off: why, and the rule when it is the host's state."""
    return {"status": "unavailable", "reason": str(setup.get("reason", "")), "metrics": None,
            **({"rule": setup["rule"]} if setup.get("rule") else {})}
