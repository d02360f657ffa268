"""The job process: run one package case, or one script run, under instrumentation.

Every outcome (a failed compile, a golden that raises, a precision miss) is reported as events;
only our own bugs end in `internal_error`. The leader turns events into a CaseResult.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import runpy
import sys
import time
import traceback
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator, NoReturn

import torch

from runtime.evidence import costmodel, dumps, flow, graph_verify, instrument, metrics, row_slices, run_options
from runtime.evidence.slice_sample import TIME_SHARE
from runtime.fence import audit, integrity
from runtime.job import kernelbench, plainrun, poison, provenance, pytest_run
from runtime.devices import standin
from runtime.job import timing
from runtime.devices import device as device_mod
from runtime.fence.events import Events
from runtime.fence.jobfiles import JobFiles

TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}
MAX_MESSAGE_CHARS = 8000
SCRUB_SHARE = 8  # the freed-memory scrub uses at most 1/8 of the job's memory limit
# pypto's own CSV compare for scripts has no golden to use; the script's asserts carry the tolerance.
SCRIPT_GRAPH_TOLERANCE = (1e-3, 1e-3)
# C++ backtrace frames pypto appends to messages: "libX.so(symbol+0x1e) [0x7f...]".
NATIVE_FRAME = re.compile(r"^\s*\S+\.so(\.\d+)*\(.*\)\s*\[0x[0-9a-f]+\]\s*$", re.MULTILINE)


class StageFailed(Exception):
    """A stage ended in error; already reported as an event."""


class GoldenError(Exception):
    """The golden raised or returned something unusable: the submission's fault."""


def main(req: dict[str, Any], events_fd: int) -> NoReturn:
    events = Events(events_fd)
    req["started_s"], code = time.monotonic(), 0
    try:
        _prepare_process(req)
        if req["mode"] == "sim":
            poison.install()  # an unwritten output reads as garbage, never as the golden (runtime.job.poison)
            req["standin_offered"] = standin.offer()  # before the seal: only sys.path changes until imported
        rec = instrument.install(req["mode"], events)
        run_options.install(rec)  # options that skip work, at each launch (S8)
        # From here on, submitted code may run: its forbidden acts go to the leader as they happen.
        audit.install(events_fd, [req["env"][k] for k in ("TILE_FWK_OUTPUT_DIR", "ASCEND_PROCESS_LOG_PATH")
                                  if req["env"].get(k)])
        # NPU: torch_npu and set_device, a stage of its own: a failure here is the card's or the host's.
        with stage(rec, "device", req.get("src_dir", "")) if req["mode"] == "npu" else nullcontext():
            device_mod.open_device(req)
        if req["kind"] == "package":
            _run_package_case(req, rec)
        else:
            code = _run_script(req, rec)
    except StageFailed:
        code = 0
    except BaseException as exc:  # noqa: BLE001 - report our own failure, never die silently
        events.emit("internal_error", error=error_info(exc, req.get("src_dir", "")))
        code = 70
    finally:
        try:
            if standin.used():
                events.emit("torch_npu", standin=True, references=standin.references_used())
            events.emit("integrity", **integrity.check())
        except BaseException:  # noqa: BLE001 - the leader counts a missing report against the job
            pass
        _flush_all()
    os._exit(code)


def _flush_all() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    ctypes.CDLL(None).fflush(None)  # pypto's C++ output sits in stdio buffers


def _prepare_process(req: dict[str, Any]) -> None:
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["work_dir"])
    sys.path.insert(0, req["src_dir"])
    # Files that peek `--run_mode` in sys.argv at import (the decorator binding idiom) see the job's mode.
    # An emulated NPU branch (runtime.evidence.emulated) tells the script `npu` while the job stays SIM.
    sys.argv = [req.get("script") or "crosscheck-case", "--run_mode", req.get("script_mode") or req["mode"]]
    torch.set_num_threads(1)


def error_info(exc: BaseException, src_dir: str) -> dict[str, Any]:
    """Type, message, and the deepest frame in the user's files."""
    file, line = "", 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if src_dir and frame.filename.startswith(src_dir):
            file, line = os.path.relpath(frame.filename, src_dir), frame.lineno or 0
    node = getattr(exc, "node", None)
    if node is not None and getattr(node, "lineno", None):
        line = int(node.lineno)
    if isinstance(exc, SyntaxError) and exc.filename and src_dir and exc.filename.startswith(src_dir):
        file, line = os.path.relpath(exc.filename, src_dir), exc.lineno or 0
    text = "".join(traceback.format_exception(exc))
    return {
        "type": type(exc).__name__,
        "message": clean_message(str(exc))[:MAX_MESSAGE_CHARS],
        "file": file,
        "line": line,
        "traceback": text[-MAX_MESSAGE_CHARS:],
    }


def clean_message(text: str) -> str:
    """Drop native backtrace frames; the useful part is the error code and its sentence."""
    return re.sub(r"\n{3,}", "\n\n", NATIVE_FRAME.sub("", text)).strip()


@contextmanager
def stage(rec: instrument.Recorder, name: str, src_dir: str) -> Iterator[None]:
    rec.events.emit("stage", name=name, status="start")
    start = time.perf_counter()
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - any failure of the submission is a result
        info = error_info(exc, src_dir)
        if rec.in_kernel:
            info["kernel"] = rec.in_kernel
        rec.events.emit("stage", name=name, status="error", duration_s=time.perf_counter() - start, error=info)
        raise StageFailed(name) from exc
    rec.events.emit("stage", name=name, status="ok", duration_s=time.perf_counter() - start)


def load_function(src_dir: str, entry: dict[str, str]) -> Any:
    path = Path(src_dir) / entry["file"]
    module_name = path.stem
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {entry['file']}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # siblings may `import <op>_impl`
        spec.loader.exec_module(module)
    fn = getattr(module, entry["function"], None)
    if not callable(fn):
        raise AttributeError(f"{entry['file']} has no function '{entry['function']}'")
    return fn


def make_input(spec: dict[str, Any], device: str = "cpu") -> torch.Tensor:
    """Draw one input the way pypto-gym tests do, after torch.manual_seed(seed).

    The harness draws on the CPU and then places the tensor (device.place), so a case gets the
    same values in SIM and on the NPU and their diffs compare like with like.
    """
    dtype = TORCH_DTYPES[spec["dtype"]]
    shape = spec["shape"]
    init = spec.get("init", "randn")
    floating = dtype.is_floating_point
    if init == "randn":
        return torch.randn(shape, dtype=dtype, device=device) if floating else \
            torch.randint(-8, 8, shape, device=device).to(dtype)
    if init == "rand":
        return torch.rand(shape, dtype=dtype, device=device) if floating else \
            torch.randint(0, 8, shape, device=device).to(dtype)
    if init == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if init == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    numel = 1
    for d in shape:
        numel *= d
    return torch.arange(numel, device=device).reshape(shape).to(dtype)


def as_outputs(value: Any, what: str) -> list[Any]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    if not items:
        raise TypeError(f"{what} returned nothing")
    return items


def _run_package_case(req: dict[str, Any], rec: instrument.Recorder) -> None:
    src, case, mode = req["src_dir"], req["case"], req["mode"]
    for rel in reversed(req.get("sys_path") or []):  # a gym pair: where the kernel's imports resolve
        sys.path.insert(0, str(Path(src) / rel))
    device = device_mod.current()
    params = case.get("params") or {}
    tolerance = (float(req["tolerance"][0]), float(req["tolerance"][1]))
    with stage(rec, "golden", src):
        task = kernelbench.Task.of(req, device.place)  # a KernelBench task, else None (docs/kernelbench.md §2)
        golden_fn = task.golden if task else load_function(src, req["golden"])
        torch.manual_seed(case["seed"])
        inputs = task.inputs if task else [device.place(make_input(spec)) for spec in case["inputs"]]
        goldens, in_place = _golden(golden_fn, inputs, params)
    rec.inputs, rec.goldens = inputs, goldens  # for launch hooks (graph verify)
    # What is compared: every output, then every input the golden wrote into (docs/realops.md §7).
    expected = [*goldens, *(g for _, g in in_place)]
    names = _output_names(case, len(goldens)) + [f"{case['inputs'][i].get('name', f'input{i}')} (in place)"
                                                   for i, _ in in_place]
    # Sent before the implementation is imported: the leader holds these hashes, so a kernel
    # that later edits the goldens in memory or on disk cannot make the harness's compare agree.
    rec.events.emit("golden", sha256=[dumps.sha256(g) for g in expected])
    # SIM jobs also poison every uninitialised allocation (runtime.job.poison); the scrub runs in both modes
    # so that the NPU path shares this code with SIM (tests/runtime/test_shared_harness.py).
    _scrub_freed_memory([*inputs, *expected], int(req["limits"]["memory_bytes"]) // SCRUB_SHARE)
    graph = _install_graph_verify(req, rec, case, tolerance)
    with stage(rec, mode, src):
        wrapper, weights = task.operator(req["impl"]) if task else (load_function(src, req["impl"]), [])
        rec.inputs = [*inputs, *weights]  # a ModelNew's weights are inputs of its kernels, not outputs
        kernel_flow = flow.start(maths=task is not None, src_dir=src)  # S4 for KernelBench tasks
        with kernel_flow:  # entered before the wrapper's code runs (docs/realops.md §7)
            result = wrapper(*inputs, **params)
        kernelbench.report_outside_maths(rec.events, kernel_flow.outside)
        device.synchronize()
    with stage(rec, "compare", src):
        outputs = as_outputs(result, "the wrapper")
        if len(outputs) != len(goldens):
            raise ValueError(f"the wrapper returned {len(outputs)} output(s), the golden {len(goldens)}")
        for out in outputs:
            if not isinstance(out, torch.Tensor):
                raise TypeError(f"the wrapper returned {type(out).__name__}, not a torch.Tensor")
        outputs = [*outputs, *(inputs[i] for i, _ in in_place)]
        goldens = expected
        origins = [provenance.provenance(rec, out, kernel_flow) for out in outputs]
        # With graph verify on, the outputs hold the graph's result. What plain SIM would have
        # returned is the bytes before the launch: SIM has no data path and leaves them as they
        # were (docs/pypto.md §2). Snapshotting them costs one copy; a second, plain SIM run would double
        # the job's time for the same bytes.
        raw = [provenance.before_launch(rec, p, out) if graph is not None and p["launch"] is not None else out
               for out, p in zip(outputs, origins)]
        # The job's own compare is its claim; its leader recompares the dumped bytes outside this
        # process (runtime.evidence.dumps) and decides with that, checking the claim against it.
        # An output whose row slices graph verify launched only in part is compared on those rows (docs/pypto.md §10).
        rows = [row_slices.coverage(rec, out) for out in outputs]
        per_output = [row_slices.compare(r, g, *tolerance, c) for r, g, c in zip(raw, goldens, rows)]
        result_event: dict[str, Any] = {"metrics": metrics.combine(per_output), "provenance": origins,
                                        "outputs": [{"name": n, "metrics": m} for n, m in zip(names, per_output)]}
        if graph is not None:
            result_event["graph_verify"] = _graph_evidence(rec, graph, outputs, goldens, origins, tolerance, rows)
        provenance.dump(req, rec, outputs, goldens, origins, rows)
        rec.events.emit("result", **result_event)
    if graph is not None and graph.verify_passes:
        _verify_passes(req, rec, wrapper, inputs, params, graph)
    if case.get("timing"):
        _time_kernel(rec, device, mode, src, lambda: wrapper(*inputs, **params), case["timing"])


def _time_kernel(rec: instrument.Recorder, device: device_mod.Device, mode: str, src: str, call: Any,
                 spec: dict[str, int]) -> None:
    """The case asked for timing: on the NPU, median and spread of the launch; SIM says why not."""
    if mode != "npu":
        rec.events.emit("timing", status="skipped",
                        reason="timing runs on the NPU; in SIM the cost model estimates the time")
        return
    with stage(rec, "timing", src), rec.unobserved():  # no snapshots: they would be timed too
        result = timing.measure(call, device.synchronize, timing.TimingSpec(**spec))
    rec.events.emit("timing", status="ok", device=device.name, **result)


def _scrub_freed_memory(like: list[torch.Tensor], budget_bytes: int, rounds: int = 4) -> None:
    """Overwrite freed blocks that may still hold golden values with NaN bytes.

    Computing the golden frees temporaries holding (copies of) the answer; the wrapper's
    torch.empty_like can get such a block back, and an output the kernel never wrote then
    "matches" the golden by accident (seen with sigmoid in SIM: bit-identical, zero launches
    writing). Allocating same-sized blocks, filling and freeing them makes that unlikely, so a
    match without a write stays strong evidence of a cheat.

    The scrub is the harness's work, not the kernel's: it stays within a share of the job's memory
    limit (smallest blocks first, fewer rounds for big ones), so it can never be what hits the limit.
    """
    sizes = sorted({t.numel() * t.element_size() for t in like if t.device.type == "cpu"})
    blocks, used = [], 0
    for n in sizes:
        for _ in range(rounds):
            if used + n > budget_bytes:
                break
            blocks.append(torch.empty(n, dtype=torch.uint8).fill_(0xFF))
            used += n
    del blocks


def _install_graph_verify(req: dict[str, Any], rec: instrument.Recorder, case: dict[str, Any],
                          tolerance: tuple[float, float]) -> graph_verify.GraphRun | None:
    cfg = req.get("graph_verify") or {}
    rule = ""  # why graph verify is off, when it is this host's state (graph_verify.CALCULATOR_NOT_READY)
    if req["mode"] != "sim":
        reason = "graph verify runs with SIM only; on the NPU the hardware result is the evidence"
        run = None
    elif not cfg.get("enabled"):
        reason, run = graph_verify.DISABLED, None
    else:
        until = req["started_s"] + TIME_SHARE * float(req["limits"]["timeout_s"])  # docs/pypto.md §10
        run, reason = graph_verify.install(rec, {**cfg, "slice_seed": case.get("seed", 0), "slice_until": until},
                                           case.get("output_args"), tolerance)
        rec.watch_calculator_limits = run is not None  # graphs the calculator computes wrongly (docs/realops.md §9)
        rule = "" if run is not None else graph_verify.unavailable_rule(reason)
    rec.events.emit("graph_verify_setup", available=run is not None, reason=reason or "", **({"rule": rule} if rule else {}))
    return run


def _graph_evidence(rec: instrument.Recorder, graph: graph_verify.GraphRun, outputs: list[torch.Tensor],
                    goldens: list[torch.Tensor], provenance: list[dict[str, Any]],
                    tolerance: tuple[float, float], covered: list[dict[str, Any] | None]) -> dict[str, Any]:
    per_output = [row_slices.compare(o, g, *tolerance, c) for o, g, c in zip(outputs, goldens, covered)]
    rows = graph_verify.read_pypto_results([launch.output_dir for launch in rec.launches])
    return {
        "metrics": metrics.combine(per_output),
        "output_written": all(p["written"] for p in provenance),
        "duration_s": round(sum(launch.duration_s for launch in rec.launches), 4),
        "goldens_registered": graph.assigned,
        "pypto": graph_verify.summarize_pypto(rows),
    }


def _verify_passes(req: dict[str, Any], rec: instrument.Recorder, wrapper: Any, inputs: list[torch.Tensor],
                   params: dict[str, Any], graph: graph_verify.GraphRun) -> None:
    """Re-run with every lowered pass checked against the tensor graph, when affordable."""
    graph_s = sum(launch.duration_s for launch in rec.launches)
    tasks = 0
    for launch in rec.launches:
        folder = Path(launch.output_dir) if launch.output_dir else None
        model = costmodel.parse(JobFiles(folder.parent), folder.name) if folder else None
        tasks += (model.aic_tasks + model.aiv_tasks) if model else 0
    estimate = graph_verify.estimate_pass_verify_s(graph_s, tasks)
    budget = min(graph_verify.PASS_VERIFY_BUDGET_S, float(req["limits"]["timeout_s"]) / 2)
    if estimate > budget:
        rec.events.emit("verify_passes", status="skipped",
                        reason=f"estimated {estimate:.0f} s > budget {budget:.0f} s; use smaller shapes")
        return
    first = len(rec.launches)
    graph.check_passes = True
    start = time.perf_counter()
    try:
        wrapper(*inputs, **params)
    except Exception as exc:  # noqa: BLE001 - a failure here is evidence, not a crash
        rec.events.emit("verify_passes", status="error", error=error_info(exc, req["src_dir"]),
                        duration_s=time.perf_counter() - start)
        return
    rows = graph_verify.read_pypto_results([launch.output_dir for launch in rec.launches[first:]])
    summary = graph_verify.summarize_pypto(rows)
    rec.events.emit("verify_passes", status=summary["result"], estimate_s=round(estimate, 2), tasks=tasks,
                    duration_s=round(time.perf_counter() - start, 3), **summary)


def _output_names(case: dict[str, Any], count: int) -> list[str]:
    named = [str(o.get("name", "")) for o in case.get("outputs") or []]
    return [named[i] if i < len(named) and named[i] else f"output{i}" for i in range(count)]


def _golden(golden_fn: Any, inputs: list[torch.Tensor],
            params: dict[str, Any]) -> tuple[list[torch.Tensor], list[tuple[int, torch.Tensor]]]:
    """The golden's outputs, and (index, value) of each input it wrote into that it did not also return."""
    given = [t.detach().to("cpu", copy=True) for t in inputs]
    pristine = [g.clone() for g in given]
    try:
        value = golden_fn(*given, **params)
    except Exception as exc:
        raise GoldenError(f"the golden raised {type(exc).__name__}: {exc}") from exc
    goldens = as_outputs(value, "the golden")
    in_place = [(i, g) for i, (g, p) in enumerate(zip(given, pristine))
                if instrument.bytes_changed(p, g) and not any(g is out for out in goldens)]
    for i, g in enumerate(goldens):
        if not isinstance(g, torch.Tensor):
            raise GoldenError(f"the golden returned {type(g).__name__} for output {i}, not a torch.Tensor")
        if g.is_floating_point() and not bool(torch.isfinite(g).all()):
            bad = int((~torch.isfinite(g)).sum())
            raise GoldenError(f"the golden returned {bad} non-finite value(s) in output {i}")
    return goldens, in_place


def _run_script(req: dict[str, Any], rec: instrument.Recorder) -> int:
    script = str(Path(req["src_dir"]) / req["script"])
    sys.argv = [script, *req.get("script_args", [])]
    sys.path.insert(0, str(Path(script).parent))
    if (Path(req["src_dir"]) / "src").is_dir():  # a checkout's src layout, as `pip install -e .` would give it
        sys.path.insert(1, str(Path(req["src_dir"]) / "src"))
    os.chdir(Path(script).parent)  # scripts read test_cases.json relative to where they are run from
    plainrun.present_output_dir(Path(script).parent)
    code: int = 0
    graph = _install_graph_verify(req, rec, {}, SCRIPT_GRAPH_TOLERANCE)
    rec.graph_on = graph is not None
    rec.goldens = []  # no golden of ours: the script's own asserts judge the graph's result
    rec.events.emit("stage", name=req["mode"], status="start")
    start = time.perf_counter()
    error = None
    try:
        with _kernel_floats(rec):
            if req["kind"] == "module":  # run as pytest runs it (docs/realops.md §4)
                pytest_run.prepare(req)
                if req.get("collect"):
                    pytest_run.collect(Path(script), Path(req["src_dir"]), rec.events)
                else:
                    pytest_run.run_item(Path(script), Path(req["src_dir"]), req["function"], bool(req.get("force")))
            else:
                runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc.code)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except BaseException as exc:  # noqa: BLE001 - the script failing is a result
        code = 1
        error = error_info(exc, req["src_dir"])
        if rec.in_kernel:
            error["kernel"] = rec.in_kernel
        traceback.print_exc()
    status = "ok" if code == 0 else "error"
    rec.events.emit("stage", name=req["mode"], status=status, duration_s=time.perf_counter() - start,
                    error=error)
    rec.events.emit("script_result", exit_code=code, launches=len(rec.launches), asserts=len(rec.asserts))
    return code


@contextmanager
def _kernel_floats(rec: instrument.Recorder) -> Iterator[None]:
    """Under graph verify: floats read from launch outputs are traced to the asserts they decide."""
    if not rec.graph_on:
        yield
        return
    kernel_flow = flow.start()
    with kernel_flow, flow.ScalarTaint(kernel_flow, instrument.scalar_compares(rec)):
        yield


def _exit_code(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    return 1
