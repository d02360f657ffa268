"""Graph verify: run the kernel's tensor graph on the CPU inside the SIM call (docs/pypto.md §3).

SIM on a CPU host writes no outputs. pypto's pass verify can run the kernel's tensor graph on
the CPU and write the computed result into the outputs, which gives real precision evidence
for the kernel's maths and tiling before any NPU run. Stock 0.2.0 stages CPU tensors through a
copy that does nothing, so the graph runs on zeros; `_setup_verify_data_cpu` fixes that.
"""
from __future__ import annotations

import csv
import ctypes
import io
import re
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from runtime.evidence import row_slices
from runtime.fence.jobfiles import JobFiles

# The pyptos whose private staging method our CPU fix replaces (docs/versions.md §2); others run without it.
SUPPORTED_PYPTO = ("0.2.0",)
CSV_NAME = "verify_result_brief.csv"
# Checking every lowered pass re-runs each pass for every loop iteration (docs/pypto.md §3), so its cost
# grows faster than the task count: measured here (dynamic_add, 64 columns) the extra time over the
# tensor-graph call was 1.5 s for 32 tasks and 12.1 s for 128 tasks, i.e. about 0.0083 * tasks**1.5.
PASS_VERIFY_S_PER_TASK15 = 0.0083
PASS_VERIFY_BUDGET_S = 120.0
MAX_CSV_BYTES = 16 * 1024 * 1024
_CLOCK = time.monotonic  # captured: when to stop launching row slices is not the submission's to change


def estimate_pass_verify_s(graph_call_s: float, tasks: int) -> float:
    return graph_call_s + PASS_VERIFY_S_PER_TASK15 * max(tasks, 1) ** 1.5


def version_problem(version: str) -> str | None:
    """Why this pypto version cannot use our CPU fix, or None (docs/versions.md §2)."""
    if version in SUPPORTED_PYPTO:
        return None
    return (f"graph verify unavailable: pypto {version} not supported (our fix for CPU tensors replaces a "
            f"private method of pypto {', '.join(SUPPORTED_PYPTO)} and is not applied to other versions)")


def installed_pypto() -> str:
    """pypto's version from its package metadata; raises when the metadata cannot be read (our host's
    state or the job's view of it, never the kernel's: runtime.judge.outcome makes it infrastructure)."""
    version = metadata.version("pypto")
    if not version:  # an empty or unreadable dist-info answers None
        raise metadata.PackageNotFoundError("pypto (its package metadata is empty or unreadable here)")
    return version


def preload(info: dict[str, Any]) -> None:
    """In the warm parent: note whether this pypto is the one our CPU fix was written for."""
    problem = version_problem(installed_pypto())
    info["graph_verify_supported"] = problem is None
    info["graph_verify_note"] = problem or ""


DISABLED = "graph verify disabled for this run"  # --no-graph-verify: the user's choice, not a finding

# Graph verify was off because this host's calculator was missing (not built, being built, failed to load):
# the host's state, not the kernel's, so such a result is never reused for a later night (server/services/reuse.py).
CALCULATOR_NOT_READY = "graph-verify-calculator-not-ready"


def unavailable_rule(reason: str | None) -> str:
    """CALCULATOR_NOT_READY when graph verify is off for want of the calculator, else ""."""
    return CALCULATOR_NOT_READY if reason and not version_problem(installed_pypto()) else ""


def unavailable_reason(calculator_lib: str | None) -> str | None:
    """Why graph verify cannot run in this job, or None when it can."""
    problem = version_problem(installed_pypto())
    if problem:
        return problem
    from pypto._utils import BuildOnlineManager

    if not BuildOnlineManager().calculator_loaded:
        return calculator_lib or "the graph-verify calculator is not loaded"
    return None


def _setup_verify_data_cpu(pto_tensors: list[Any]) -> None:
    """Replacement for JitCallableWrapper._setup_verify_data: register the real CPU tensors.

    Stock 0.2.0 copies every argument into fresh zero buffers with CopyToHost, which does
    nothing for CPU tensors, so the graph ran on zeros and its zero result was copied back into
    the inputs. Device tensors keep the stock path.
    """
    import pypto
    from pypto import pypto_impl
    from pypto._utils import BuildOnlineManager
    from pypto.frontend.parser.entry import _pto_to_tensor_data
    from pypto.runtime import _pto_verify_datas

    if not pypto.get_verify_options().get("enable_pass_verify"):
        return
    if any(str(getattr(t, "device", "cpu")) != "cpu" for t in pto_tensors):
        return _STOCK_SETUP(pto_tensors)
    if not BuildOnlineManager().calculator_loaded:
        # Never let a job pay the ~60 s stock build (and never fake the flag: that segfaults).
        raise RuntimeError("graph verify: calculator not loaded")
    pypto_impl.SetVerifyData(_pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data())


_STOCK_SETUP: Any = None


class GraphRun:
    """Per-job state: which arguments get goldens, and the goldens kept alive for pypto."""

    def __init__(self, rec: Any, output_args: list[int | str] | None, tolerance: tuple[float, float],
                 verify_passes: bool, slice_budget: int | None = None, slice_count: int | None = None,
                 slice_seed: int = 0, slice_until: float = float("inf")):
        self.rec = rec
        self.output_args = output_args
        self.tolerance = tolerance
        self.verify_passes = verify_passes
        self.check_passes = False  # the first call checks the tensor graph only; see child._verify_passes
        self.registered: list[Any] = []  # pypto keeps raw pointers: hold the tensors
        self.assigned: list[dict[str, Any]] = []
        self.slice_budget = int(slice_budget or 0)  # predicted graph bytes above which a launch is sliced
        self.chunk_goldens: list[Any] | None = None  # the goldens of the row slice being launched
        self.slice_count = slice_count  # at most this many slices of a sliced launch (slice_sample.sample); None: all
        self.slice_seed = slice_seed  # the case's seed: the order of the middle slices
        self.slice_until = slice_until  # time.monotonic() past which no further slice starts (slice_sample.TIME_SHARE)

    def before_launch(self, wrapper: Any, tensors: list[Any]) -> None:
        import pypto

        options = dict(wrapper._verify_options or {})
        options["enable_pass_verify"] = True
        options["pass_verify_error_tol"] = list(self.tolerance)
        if self.check_passes:
            options.pop("pass_verify_pass_filter", None)
        else:
            options["pass_verify_pass_filter"] = []  # the tensor graph only
        wrapper._verify_options = options
        goldens = self._goldens_for(wrapper, tensors)
        self.registered.append(goldens)
        pypto.set_verify_golden_data(goldens=goldens)

    def _goldens_for(self, wrapper: Any, tensors: list[Any]) -> list[Any]:
        """One entry per tensor argument: the golden for outputs, None for inputs."""
        from runtime.evidence import instrument

        names = _param_names(wrapper, len(tensors))
        if self.output_args is not None:
            outputs = [i for i, n in enumerate(names) if i in self.output_args or n in self.output_args]
        else:
            input_ids = {instrument.storage_id(t) for t in self.rec.inputs}
            outputs = [i for i, t in enumerate(tensors) if instrument.storage_id(t) not in input_ids]
        goldens = list(self.rec.goldens or []) if self.chunk_goldens is None else self.chunk_goldens
        entries: list[Any] = [None] * len(tensors)
        used: set[int] = set()
        for i in outputs:
            match = next((k for k, g in enumerate(goldens) if k not in used and list(g.shape) == list(tensors[i].shape)),
                         None)
            if match is None:
                continue
            used.add(match)
            entries[i] = goldens[match].to(tensors[i].dtype).contiguous()
            self.assigned.append({"arg": i, "name": names[i], "golden": match})
        return entries

    def slice_launch(self, wrapper: Any, args: tuple[Any, ...], kwargs: dict[str, Any], launch: Any) -> Any:
        """A launch whose tensor graph the calculator could not hold, run as launches on row slices the
        kernel's loop makes independent (runtime.evidence.row_slices); NOT_SLICED for any other."""
        import torch

        from runtime.evidence import instrument

        # A script's or test module's own asserts read every row of the output (instrument._output_holding matches
        # them to the whole sliced tensor): all its slices are launched (docs/pypto.md §10).
        script = self.rec.graph_on
        count = None if script else self.slice_count
        plan = row_slices.plan(wrapper, args, list(self.rec.goldens or []), self.slice_budget, count,
                               self.slice_seed) if self.chunk_goldens is None else None
        if plan is None:
            return instrument.NOT_SLICED
        result, launched, longest = None, 0, 0.0
        for chunk_args, chunk_goldens in plan.chunks:
            if launched >= 2 and not script and _CLOCK() + longest > self.slice_until:
                break  # the next slice would end past the time share: its rows get no graph evidence
            self.chunk_goldens, started = chunk_goldens, _CLOCK()
            try:
                result = launch(wrapper, *chunk_args, **kwargs)
            finally:
                self.chunk_goldens = None
            launched, longest = launched + 1, max(longest, _CLOCK() - started)
        rows = {"dim": plan.dim, "verified": plan.verified(launched), "of": plan.total}
        for arg in args:  # the whole tensors cut into slices: the outputs compared on the verified rows only
            if isinstance(arg, torch.Tensor) and arg.dim() > plan.dim and arg.shape[plan.dim] == plan.total:
                self.rec.row_coverage[instrument.storage_id(arg)] = rows
                self.rec.sliced_wholes.append(arg)
        self.rec.events.emit("graph_row_slices", kernel=getattr(wrapper, "__name__", "kernel"), dim=plan.dim,
                             rows=plan.rows, slices=plan.slices, launched=launched, verified=rows["verified"],
                             of=plan.total)
        return result


def _param_names(wrapper: Any, count: int) -> list[str]:
    try:
        code = wrapper._original_func.__code__
        return list(code.co_varnames[: code.co_argcount])[:count]
    except AttributeError:
        return [f"arg{i}" for i in range(count)]


def install(rec: Any, cfg: dict[str, Any], output_args: list[int | str] | None,
            tolerance: tuple[float, float]) -> tuple[GraphRun | None, str | None]:
    """Patch pypto for CPU graph verify in this job. Returns (run, None) or (None, why not)."""
    reason = unavailable_reason(cfg.get("calculator_note"))
    if reason:
        return None, reason
    global _STOCK_SETUP
    from pypto.frontend.parser.entry import JitCallableWrapper

    if _STOCK_SETUP is None:
        _STOCK_SETUP = JitCallableWrapper._setup_verify_data
        JitCallableWrapper._setup_verify_data = staticmethod(_setup_verify_data_cpu)
    if rec.launch_seal is not None:
        rec.launch_seal.allow(JitCallableWrapper, "_setup_verify_data")
    count = cfg.get("slice_count")
    run = GraphRun(rec, output_args, tolerance, bool(cfg.get("verify_passes")), cfg.get("slice_budget_bytes"),
                   None if count is None else int(count), int(cfg.get("slice_seed") or 0),
                   float(cfg.get("slice_until") or float("inf")))
    rec.before_launch.append(run.before_launch)
    rec.slice_launch = run.slice_launch
    return run, None


def remove(rec: Any, run: GraphRun) -> None:
    """Stop verifying further launches (the retry without graph verify after an error)."""
    if run.before_launch in rec.before_launch:
        rec.before_launch.remove(run.before_launch)
    rec.slice_launch = None
    import pypto

    pypto.set_verify_options(enable_pass_verify=False)


def flush_stdio() -> None:
    """pypto writes the CSV through stdio buffers that only flush at process exit."""
    ctypes.CDLL(None).fflush(None)


def read_pypto_results(output_dirs: list[str]) -> list[dict[str, str]]:
    """Rows of pypto's own verify_result_brief.csv files for these SIM calls."""
    flush_stdio()
    rows: list[dict[str, str]] = []
    for out in output_dirs:
        if not out:
            continue
        folder = JobFiles(Path(out))
        for name, kind in folder.listdir():
            if kind == "dir" and name.startswith("verify_"):
                rows += csv_rows(folder.read_or_none(f"{name}/{CSV_NAME}", MAX_CSV_BYTES) or b"")
    return rows


def csv_rows(data: bytes) -> list[dict[str, str]]:
    """The rows of one verify_result_brief.csv (untrusted text: bad rows are skipped)."""
    rows = []
    try:
        for row in csv.DictReader(io.StringIO(data.decode("utf-8", "replace"))):
            rows.append({str(k).strip(): str(v or "").strip() for k, v in row.items() if k})
    except csv.Error:
        pass
    return rows


def summarize_pypto(rows: list[dict[str, str]]) -> dict[str, Any]:
    """pypto's own verdict from its CSV: fail if any row FAILED, pass if any PASS, else no_compare."""
    results = [r.get("verifyResult", "") for r in rows]
    verdict = "fail" if "FAILED" in results else ("pass" if "PASS" in results else "no_compare")
    first_fail = next((r for r in rows if r.get("verifyResult") == "FAILED"), None)
    # A lowered pass compared with the tensor graph (not the graph with the golden): where a
    # compiler pass first changed the result.
    first_pass = next((r for r in rows if r.get("verifyResult") == "FAILED" and r.get("referPassName") != "golden"),
                      None)
    keep = ("passName", "referPassName", "verifyResult", "maxAbsDiff", "maxRelDiff", "errorCount", "errorRatio",
            "outputShape", "outputDtype")
    return {
        "result": verdict,
        "rows": [{k: r.get(k, "") for k in keep} for r in rows[:200]],
        "first_failed_pass": first_fail.get("passName") if first_fail else None,
        "first_failed": {k: first_fail.get(k, "") for k in keep} if first_fail else None,
        "first_divergent_pass": {k: first_pass.get(k, "") for k in keep} if first_pass else None,
    }


# pypto 0.2.0's calculator copying a partial tile whose valid shape grew to the full tile (docs/realops.md §6).
PARTIAL_TILE_SIGNATURE = re.compile(r"setStorage.*out of bounds", re.DOTALL)
PARTIAL_TILE_RULE = "graph-verify-partial-tile-composite"
_ASSEMBLE_LINE = re.compile(r"<[^<>\n]*> = ASSEMBLE <[^<>\n]*>")


def failure(error: dict[str, Any] | None, texts: list[str]) -> dict[str, Any]:
    """graph_verify of a case whose kernel fails only with graph verify on: a known pypto limit, or an error."""
    text = " ".join(texts)
    if PARTIAL_TILE_SIGNATURE.search(text):
        shapes = _ASSEMBLE_LINE.search(text)
        where = f" (pypto: `{shapes.group(0)}`, destination <shape/valid> = ASSEMBLE <tile/valid>)" if shapes else ""
        return {"status": "unsupported", "metrics": None, "rule": PARTIAL_TILE_RULE, "error": error,
                "reason": ("the graph-verify calculator refused to copy a partial tile into its smaller destination "
                           f"('setStorage ... out of bounds'){where}: the tile's valid shape had grown to the full "
                           "tile on the way. pypto 0.2.0's stock sigmoid does this (its constant 1.0 has the full "
                           "tile as valid shape; spelled out as 1 / (1 + exp(-x)) it keeps the valid shape); a "
                           "view/transpose/reshape chain that drops valid_shape can too. Plain SIM ran the kernel; "
                           "the case is judged without graph evidence, and whether the NPU writes the extra rows is "
                           "not measured (docs/realops.md §6)")}
    return {"status": "error", "metrics": None, "error": error,
            "reason": "graph verify failed while plain SIM runs the kernel"}
