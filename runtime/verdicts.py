"""Per-case verdicts: the one place that decides them.

| verdict               | meaning |
|-----------------------|---------|
| pass                  | NPU only: the kernel ran, wrote its output, and the output is within tolerance of the golden. A SIM case is never `pass` |
| precision_fail        | the kernel ran and wrote its output, but the output is outside tolerance (or has the wrong shape) |
| structural_error      | the kernel failed to parse, compile or run (an exception in the SIM/NPU stage), or its result has the wrong structure |
| crash                 | the job process died: a signal (segfault, abort), an unexpected exit, or out-of-memory |
| timeout               | the job ran past its wall-clock limit and was killed |
| resource_limit        | the job hit one of its limits (memory, processes, disk) and was stopped; the reason names the limit and how to raise it |
| not_run               | no kernel ran: the wrapper/script never launched a jit kernel, or the golden failed so the case could not be evaluated |
| sim_unsupported       | SIM mode only: this host's simulator cannot simulate an op the kernel uses (runtime.judge.simgap), so nothing is known about the kernel; only an NPU can judge it. Not a kernel defect |
| suspect_fake_pass     | the result matches the golden (exactly or within tolerance) but the kernel cannot have produced it: no kernel launched (or only launches that raised, caught so that the check passed), lint found a golden fallback, the kernel did not write the output that matches, or SIM (which has no data path) "wrote" it; also any job whose own report contradicts what the harness checked outside it (forged launches, edited harness code, metrics or bytes that disagree) |
| inconclusive          | the output matches, but the compare cannot tell a correct kernel from garbage (runtime.judge.degenerate: a golden that zeros match, or one value everywhere); no positive evidence of a cheat either. Acceptable in both modes: not a pass, not a defect |
| sim_output_unwritten  | SIM compiled and ran the kernel but, as SIM always does on a CPU host, wrote no output: structure OK, no precision evidence |
| sim_garbage_graph_ok  | as sim_output_unwritten, and graph verify ran the kernel's tensor graph on the CPU and matched the golden: the SIM garbage is benign; hardware precision still awaits the NPU |
| graph_fail            | SIM compiled and ran the kernel, but its tensor graph computed on the CPU does not match the golden (or never writes the output): the kernel's maths or tiling is wrong, no NPU needed |
| version_skew          | the kernel failed because it was written for another pypto: it uses a name, a call or syntax the installed pypto lacks or spells differently (runtime.judge.skew). Not a kernel defect; run it with the pypto it targets |

Graph verify never makes a case `pass`: precision on hardware is the NPU's word. Launches count
only when pypto's own call folders corroborate them, and the metrics are the harness's recompare
of the dumped bytes (runtime.evidence.corroborate, docs/SECURITY.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASS = "pass"
PRECISION_FAIL = "precision_fail"
STRUCTURAL_ERROR = "structural_error"
CRASH = "crash"
TIMEOUT = "timeout"
RESOURCE_LIMIT = "resource_limit"
NOT_RUN = "not_run"
# The stage of a script case that exited 0 and launched no jit kernel: nothing about a kernel to judge.
NO_KERNEL_STAGE = "no_kernel"
# The stage of a test function its author marked skip (`@pytest.mark.skip`): not run, as pytest would not.
SKIPPED_STAGE = "skipped"
# The stage of a test function that needs an argument crosscheck cannot supply: the kernel never ran.
ARGUMENTS_STAGE = "arguments"
# The stage of a case whose golden or test called a torch_npu op only an NPU can run: not judged on this host.
NPU_ONLY_STAGE = "npu_only"
# The stage of a case this host's Python stopped before any kernel ran (runtime/judge/envgap.py).
ENVIRONMENT_STAGE = "environment"
# The stage of a case the harness's own code failed (in the job, its leader or the warm parent): infrastructure.
HARNESS_STAGE = "harness"
SUSPECT_FAKE_PASS = "suspect_fake_pass"
SIM_OUTPUT_UNWRITTEN = "sim_output_unwritten"
SIM_GARBAGE_GRAPH_OK = "sim_garbage_graph_ok"
GRAPH_FAIL = "graph_fail"
VERSION_SKEW = "version_skew"
SIM_UNSUPPORTED = "sim_unsupported"
INCONCLUSIVE = "inconclusive"

VERDICTS = (PASS, PRECISION_FAIL, STRUCTURAL_ERROR, CRASH, TIMEOUT, RESOURCE_LIMIT, NOT_RUN, SUSPECT_FAKE_PASS,
            SIM_OUTPUT_UNWRITTEN, SIM_GARBAGE_GRAPH_OK, GRAPH_FAIL, VERSION_SKEW, SIM_UNSUPPORTED, INCONCLUSIVE)

# What `crosscheck run` accepts (exit 0) per mode: SIM judges structure, the NPU precision. A degenerate
# compare (inconclusive) is no fault of the kernel: other cases judge it (docs/realops.md §11).
ACCEPTABLE = {"sim": {SIM_OUTPUT_UNWRITTEN, SIM_GARBAGE_GRAPH_OK, INCONCLUSIVE}, "npu": {PASS, INCONCLUSIVE}}


# A script's stage ended by its own precision check (TestFailed: a test function returned False).
SIM_ASSERT_FAILURES = ("AssertionError", "TestFailed")


@dataclass
class Evidence:
    """What a case produced, reduced to what the verdict depends on."""
    mode: str
    structural: str  # ok | error | crash | timeout | oom | resource_limit | not_run
    golden_failed: bool = False
    kernel_launches: int = 0  # corroborated by pypto's call folders
    launches_reported: int = 0  # as the job's events claim
    metrics: dict[str, Any] | None = None
    within_tolerance: bool | None = None
    output_written: bool | None = None
    golden_fallback: bool = False  # lint found a try/except returning golden/torch maths
    graph_status: str | None = None  # pass | fail | error | unavailable (SIM graph verify)
    # scripts
    is_script: bool = False
    exit_code: int | None = None
    asserts_passed: int = 0
    asserts_failed: int = 0
    asserts_failed_unwritten: int = 0  # failed on a kernel argument that SIM never wrote (runtime.evidence.instrument)
    failed_type: str = ""  # the exception that ended the stage, if any
    raised_after_launches: bool = False  # the test's own code raised after every launch returned (runtime.judge.outcome)
    markers: dict[str, int] = field(default_factory=dict)
    # where the job's report disagrees with the harness's own checks (runtime.evidence.corroborate)
    contradictions: list[str] = field(default_factory=list)
    changed_after_launch: bool = False  # the output's bytes changed after the kernel's last launch
    device_failed: bool = False  # NPU: torch_npu or set_device failed before anything ran
    resource_limit: str = ""  # which limit stopped the job, and how to raise it (structural resource_limit)
    version_skew: str | None = None  # what the installed pypto lacks, when the failure says so (runtime.judge.skew)
    sim_gap: str | None = None  # what this host's SIM cannot simulate, when the failure says so (runtime.judge.simgap)
    graph_untrusted: str = ""  # why graph verify's values are no evidence for this kernel (runtime.evidence.calculator_limits)
    degenerate: str = ""  # why the compare cannot tell a correct kernel from garbage (runtime.judge.degenerate)
    launch_failed: bool = False  # a launch the job reported raised (the kernel failed to compile or run)
    unlaunched_output: bool = False  # the wrapper returned a tensor no launch was handed (runtime.job.provenance)


def decide(ev: Evidence) -> tuple[str, str, str]:
    """(verdict, precision, reason) for one case."""
    if ev.structural == "resource_limit":
        return RESOURCE_LIMIT, "not_applicable", ev.resource_limit or "the job hit a resource limit"
    if ev.structural == "timeout":
        return TIMEOUT, "not_applicable", "the job ran past its time limit"
    if ev.structural in ("crash", "oom"):
        what = "ran out of memory" if ev.structural == "oom" else "crashed"
        return CRASH, "not_applicable", f"the job process {what}"
    if ev.device_failed:
        return NOT_RUN, "not_applicable", "the NPU device could not be set up, so nothing ran: see the error"
    if ev.golden_failed:
        return NOT_RUN, "not_applicable", "the golden failed: fix the submission's golden; the kernel was not judged"
    if ev.contradictions:
        return SUSPECT_FAKE_PASS, "not_applicable", (
            f"the job's own report contradicts what the harness checked outside it: {ev.contradictions[0]}")
    if ev.version_skew and (ev.structural == "error" or (ev.is_script and ev.exit_code not in (0, None))):
        return VERSION_SKEW, "not_applicable", f"written for another pypto: {ev.version_skew}"
    if ev.mode == "sim" and ev.sim_gap and (ev.structural in ("error", "not_run")
                                            or (ev.is_script and ev.exit_code not in (0, None))):
        return SIM_UNSUPPORTED, "not_applicable", (
            f"SIM cannot judge this case on a CPU host: {ev.sim_gap}. Nothing is known about the kernel; judge it "
            "on an NPU")
    if ev.is_script:
        return _decide_script(ev)
    if ev.structural == "error":
        return STRUCTURAL_ERROR, "not_applicable", "the kernel failed to compile or run"
    matches = bool(ev.within_tolerance)
    if ev.kernel_launches == 0:
        if matches:
            return SUSPECT_FAKE_PASS, "not_applicable", "the result matches the golden but no jit kernel launched" + (
                _uncorroborated(ev))
        return NOT_RUN, "not_applicable", "the wrapper never launched a jit kernel" + _uncorroborated(ev)
    if matches and ev.golden_fallback:
        return SUSPECT_FAKE_PASS, "not_applicable", "the result matches, and lint found a golden fallback around the kernel"
    if matches and ev.changed_after_launch:
        return SUSPECT_FAKE_PASS, "not_applicable", (
            "the result matches the golden, but its bytes changed after the kernel's last launch: code outside the "
            "kernel wrote them")
    if matches and ev.degenerate and not ev.unlaunched_output:
        if ev.mode == "sim" and ev.graph_status == "fail":  # the graph's own compare showed wrong maths
            return _decide_sim(ev, False, True)
        return _inconclusive(ev)
    if matches and not ev.output_written:
        return SUSPECT_FAKE_PASS, "not_applicable", "the result matches the golden but the kernel did not write it"
    shape_ok = bool(ev.metrics and ev.metrics.get("shape_match"))
    if ev.mode == "sim":
        return _decide_sim(ev, matches, shape_ok)
    if matches:
        return PASS, "pass", "within tolerance"
    return PRECISION_FAIL, "fail", "outside tolerance" if shape_ok else "the output's shape differs from the golden's"


def _uncorroborated(ev: Evidence) -> str:
    if ev.launches_reported > ev.kernel_launches:
        return (f" that pypto corroborates (the job reported {ev.launches_reported} launch(es); pypto's call folders "
                "show none)")
    return ""


def _decide_sim(ev: Evidence, matches: bool, shape_ok: bool) -> tuple[str, str, str]:
    """SIM judges structure only: it has no data path on a CPU host (docs/pypto.md §2), so never `pass`."""
    if not shape_ok:
        return STRUCTURAL_ERROR, "not_applicable", "the output's shape differs from the golden's"
    if ev.graph_status == "fail":
        return GRAPH_FAIL, "not_applicable", "the kernel's tensor graph, run on the CPU, does not match the golden"
    if matches:
        return SUSPECT_FAKE_PASS, "not_applicable", (
            "the result matches the golden, but SIM writes no outputs on a CPU host: the kernel cannot have produced it")
    if ev.graph_status == "pass" and not ev.output_written:
        return SIM_GARBAGE_GRAPH_OK, "not_applicable", (
            "SIM writes no outputs on a CPU host; graph verify matched the golden, so the SIM garbage is benign")
    if ev.output_written:
        return SIM_OUTPUT_UNWRITTEN, "not_applicable", (
            "SIM compiled and ran the kernel; the output changed during the call, which SIM itself cannot do on a "
            "CPU host, so its bytes are no evidence")
    return SIM_OUTPUT_UNWRITTEN, "not_applicable", "SIM compiled and ran the kernel; SIM writes no outputs on a CPU host"


def _inconclusive(ev: Evidence) -> tuple[str, str, str]:
    return INCONCLUSIVE, "not_applicable", (
        f"the output matches, but the compare cannot tell a correct kernel from garbage: {ev.degenerate}. No "
        "evidence of a cheat and none of correctness; other cases (or other shapes) judge this kernel")


def _failed_launch_cheat(ev: Evidence) -> tuple[str, str, str] | None:
    """A script whose kernel failed and whose precision check passed anyway: something else was compared."""
    passed = ev.asserts_passed > 0 or ev.markers.get("precision_pass", 0) > 0
    if ev.kernel_launches or not passed or not (ev.launch_failed or ev.golden_fallback):
        return None
    how = " and ".join(w for w, on in (("its launch raised", ev.launch_failed),
                                        ("lint found a golden fallback", ev.golden_fallback)) if on)
    return SUSPECT_FAKE_PASS, "not_applicable", (
        f"the script's precision check passed, but no kernel launch completed ({how}): what it compared is not "
        "the kernel's output")


def _decide_script(ev: Evidence) -> tuple[str, str, str]:
    cheat = _failed_launch_cheat(ev)
    if cheat:
        return cheat
    if ev.mode == "sim" and ev.kernel_launches > 0 and ev.graph_untrusted and not ev.golden_fallback and (
            (ev.exit_code == 0 and ev.structural == "ok")
            or (ev.raised_after_launches and ev.failed_type in SIM_ASSERT_FAILURES)):
        # The script's checks, passed or failed, read values a known calculator limit computed wrongly.
        return SIM_OUTPUT_UNWRITTEN, "not_applicable", (
            "SIM ran the kernels; the script's own checks then read the graph-verify calculator's values, which are "
            f"no evidence for this kernel: {ev.graph_untrusted}")
    if ev.mode == "sim" and ev.kernel_launches > 0 and ev.graph_status == "fail":
        return GRAPH_FAIL, "not_applicable", (
            "the script's own check failed on the kernel's tensor graph run on the CPU: its maths or tiling is wrong")
    if (ev.mode == "sim" and ev.kernel_launches > 0 and ev.graph_status == "pass" and ev.exit_code == 0
            and ev.structural == "ok" and not ev.golden_fallback):
        return SIM_GARBAGE_GRAPH_OK, "not_applicable", (
            "SIM writes no outputs on a CPU host; the script's own asserts passed on the tensor graph's result, so "
            "the SIM garbage is benign")
    if (ev.mode == "sim" and ev.kernel_launches > 0 and ev.asserts_failed > 0
            and ev.asserts_failed == ev.asserts_failed_unwritten and ev.failed_type in SIM_ASSERT_FAILURES):
        return SIM_OUTPUT_UNWRITTEN, "not_applicable", (
            "SIM compiled and ran the kernel; the script's own assert then failed on an output SIM never wrote (SIM "
            "writes no outputs on a CPU host), so it judged nothing (docs/realops.md §4)")
    failed_precision = ev.asserts_failed > 0 or ev.markers.get("precision_fail", 0) > 0
    passed_precision = ev.asserts_passed > 0 or ev.markers.get("precision_pass", 0) > 0
    if ev.exit_code not in (0, None) or ev.structural == "error":
        if failed_precision and ev.kernel_launches > 0 and ev.mode == "npu":
            return PRECISION_FAIL, "fail", "the script's precision check failed"
        if ev.raised_after_launches and ev.kernel_launches > 0:
            return STRUCTURAL_ERROR, "not_applicable", (
                f"the kernels ran to completion; then the test's own code raised {ev.failed_type or 'an exception'} "
                "(no assert the harness reads): a failed check of its own or an error in the test, the harness "
                "cannot tell which; see the error")
        if ev.kernel_launches == 0 and ev.structural != "error":
            return NOT_RUN, "not_applicable", f"the script exited with code {ev.exit_code} before any kernel ran"
        return STRUCTURAL_ERROR, "not_applicable", f"the script failed (exit code {ev.exit_code})"
    if ev.kernel_launches == 0:
        return NOT_RUN, "not_applicable", "exit code 0 but no jit kernel launched" + _uncorroborated(ev)
    if passed_precision and not failed_precision and ev.degenerate and not ev.golden_fallback:
        return _inconclusive(ev)
    if passed_precision and (ev.golden_fallback or not ev.output_written):
        return SUSPECT_FAKE_PASS, "not_applicable", (
            "the script's precision check passed but lint found a golden fallback" if ev.golden_fallback
            else "the script's precision check passed but no kernel wrote any output")
    if ev.mode == "sim":
        if passed_precision and not ev.asserts_passed and ev.graph_status == "no_compare":
            # Only a printed marker, and graph verify had put the graph's CPU result in the outputs: the marker
            # says nothing about SIM, and no assert we saw compared a kernel output.
            return SIM_OUTPUT_UNWRITTEN, "not_applicable", (
                "SIM ran the kernels; the script printed a pass marker but no assert compared a kernel output, so "
                "there is no precision evidence (graph verify: no_compare)")
        if passed_precision:
            return SUSPECT_FAKE_PASS, "not_applicable", (
                "the script's precision check passed in SIM, which writes no outputs on a CPU host")
        return SIM_OUTPUT_UNWRITTEN, "not_applicable", "SIM ran the kernels; SIM writes no outputs on a CPU host"
    if failed_precision:
        return PRECISION_FAIL, "fail", "the script's precision check failed"
    if passed_precision:
        return PASS, "pass", "the script's precision checks passed"
    return NOT_RUN, "not_applicable", "kernels ran but the script compared nothing: no precision evidence"


def acceptable(verdict: str, mode: str) -> bool:
    return verdict in ACCEPTABLE.get(mode, set())
