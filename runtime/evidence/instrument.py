"""In the job process: watch every jit kernel launch and every precision assert.

Installed before the submission is imported, so the file's own decorators and asserts are the
ones instrumented. The run mode is forced here whatever the file bound at import (docs/pypto.md §1).
"""
from __future__ import annotations

import math
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from runtime.evidence import dtype_views, dumps, flow, loop_carried, metrics
from runtime.fence import audit, integrity
from runtime.evidence import launch_seal, rawbytes
from runtime.fence.events import Events

RUN_MODE_VALUES = {"npu": 0, "sim": 1}  # pypto.RunMode values
_CLOCK = time.perf_counter  # captured: the launch's end runs nothing the submission can replace


@dataclass
class LaunchRecord:
    kernel: str
    args: list[torch.Tensor]
    written: list[bool]
    duration_s: float
    output_dir: str
    error: str = ""
    storages: list[int] = field(default_factory=list)
    before: list[torch.Tensor | None] = field(default_factory=list)  # argument bytes before the launch
    post_sha256: list[str | None] = field(default_factory=list)  # argument bytes right after it


class Recorder:
    """Everything the instrumentation saw in this job."""

    def __init__(self, mode: str, events: Events):
        self.mode = mode
        self.events = events
        self.launches: list[LaunchRecord] = []
        self.asserts: list[dict[str, Any]] = []
        self.before_launch: list[Callable[[Any, list[torch.Tensor]], None]] = []
        self.in_kernel: str | None = None  # the kernel being launched, for crash reports
        self.inputs: list[torch.Tensor] = []
        self.goldens: list[torch.Tensor] | None = None
        self.observing = True  # off while timing: launches then run bare (mode still forced)
        self.graph_on = False  # scripts under graph verify: asserts judge the graph's result
        # under graph verify: launches the calculator could not hold, run on row slices (runtime.evidence.row_slices)
        self.slice_launch: Callable[..., Any] | None = None
        # ... and the rows of each sliced tensor the slices launched covered, by storage: {"dim", "verified", "of"}
        self.row_coverage: dict[int, dict[str, Any]] = {}
        self.sliced_wholes: list[torch.Tensor] = []  # ... and those tensors whole, for a script's asserts
        self.watch_calculator_limits = False  # under graph verify: note what it gets wrong (dtype_views, loop_carried)
        self.launch_seal: launch_seal.Seal | None = None  # pypto's launch code as it was (runtime.evidence.launch_seal)

    @contextmanager
    def unobserved(self) -> Iterator[None]:
        """Launches inside run without snapshots, hooks or records (the timing loop's repeats)."""
        self.observing = False
        try:
            yield
        finally:
            self.observing = True


_recorder: Recorder | None = None


def _snapshot(t: torch.Tensor) -> torch.Tensor | None:
    if t.is_meta:  # no data to copy; pypto rejects it itself
        return None
    return t.detach().to("cpu", copy=True).contiguous()


class _Watch:
    """One launch argument's memory, located before the launch and read raw (runtime.evidence.rawbytes).

    The layout is taken before the launch and kept: whatever the submission's Python does to the
    tensor object or to torch during the launch, the after-launch read is of the memory pypto was
    handed. Device tensors (NPU) have no CPU memory to read: they go through torch's copy.
    """

    def __init__(self, t: torch.Tensor):
        self.tensor = t
        try:
            self.layout: rawbytes.Layout | None = rawbytes.layout(t)
        except rawbytes.NotReadable:
            self.layout = None
        self.raw = rawbytes.read_layout(self.layout) if self.layout is not None else None
        if self.layout is not None and self.raw is not None:
            self.before: torch.Tensor | None = rawbytes.as_tensor(self.raw, self.layout)
        else:
            self.before = _snapshot(t)

    def after(self) -> tuple[bool, str | None]:
        """(written, sha256 of the bytes now) for this argument's memory."""
        if self.layout is not None:
            now = rawbytes.read_layout(self.layout)
            return now != self.raw, rawbytes.sha256(now)
        after = _snapshot(self.tensor)
        return bytes_changed(self.before, after), dumps.sha256(after) if after is not None else None


def bytes_changed(before: torch.Tensor | None, after: torch.Tensor | None) -> bool:
    """True when any byte differs (NaN-safe: compares raw bytes, not values)."""
    if before is None or after is None:
        return False
    a = before.reshape(-1).view(torch.uint8)
    b = after.reshape(-1).view(torch.uint8)
    return not torch.equal(a, b)


def storage_id(t: torch.Tensor) -> int:
    return rawbytes.storage_ptr(t)


def _last_output_dir() -> str:
    try:
        import pypto

        return str(pypto.pypto_impl.LogTopFolder())
    except Exception:  # noqa: BLE001 - best effort, the folder is only evidence
        return ""


NOT_SLICED = object()  # what Recorder.slice_launch returns for a launch it leaves whole


def install(mode: str, events: Events) -> Recorder:
    """Patch pypto's jit wrapper and the usual assert helpers. Idempotent per process."""
    global _recorder
    _recorder = Recorder(mode, events)
    _patch_jit(_recorder, events)
    _patch_asserts(_recorder)
    dtype_views.install(_recorder)
    loop_carried.install(_recorder)
    integrity.seal()  # after our patches, before any submission code runs
    if _recorder.launch_seal is not None:
        _recorder.launch_seal.renew()
    return _recorder


def _patch_jit(rec: Recorder, events: Events) -> None:
    import pypto
    from pypto.frontend.parser.entry import JitCallableWrapper

    original = JitCallableWrapper.__call__
    forced = RUN_MODE_VALUES[rec.mode]
    # pypto's class and its log folder's getter as they are before any submission code (runtime.evidence.launch_seal)
    seal = launch_seal.Seal(JitCallableWrapper, pypto.pypto_impl.LogTopFolder,
                            audit.emitter(events.fd) if events.fd is not None else None,
                            [sys.modules[JitCallableWrapper.__module__], pypto.pypto_impl])

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Force the job's mode whatever the decorator bound at import time.
        self._runtime_options["run_mode"] = forced
        seal.kernel_object(self, "before", len(rec.launches), remove=True)
        seal.replaced("before", len(rec.launches))
        seal.concurrent("before", len(rec.launches))
        if not rec.observing:
            return original(self, *args, **kwargs)
        if rec.slice_launch is not None:
            sliced = rec.slice_launch(self, args, kwargs, launch)
            if sliced is not NOT_SLICED:
                return sliced
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        for hook in rec.before_launch:
            hook(self, tensors)
        watches = [_Watch(t) for t in tensors]
        name = getattr(self, "__name__", "kernel")
        rec.in_kernel = name
        rec.events.emit("launch_start", kernel=name, index=len(rec.launches))
        start = _CLOCK()
        error = ""
        try:
            # pypto's own torch calls run outside the data-flow record; the submission's Python runs nowhere in it
            with flow.suspended(), seal.inside(len(rec.launches)):
                return original(self, *args, **kwargs)
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"[:2000]
            raise
        finally:
            duration = _CLOCK() - start
            written, hashes = [], []
            for watch in watches:  # one copy at a time
                wrote, digest = watch.after()
                written.append(wrote)
                hashes.append(digest)
            seal.verify_csvs(len(rec.launches))  # before any submitted code runs again
            seal.kernel_object(self, "during", len(rec.launches), remove=False)
            seal.replaced("during", len(rec.launches))
            seal.concurrent("during", len(rec.launches))
            record = LaunchRecord(name, tensors, written, duration, _last_output_dir(), error,
                                  [storage_id(t) for t in tensors], [w.before for w in watches], hashes)
            rec.launches.append(record)
            flow.launched([t for t, wrote in zip(tensors, written) if wrote], len(rec.launches) - 1,
                          [t for t, wrote in zip(tensors, written) if not wrote])
            rec.in_kernel = None
            rec.events.emit("launch", kernel=name, output_written=written,
                            arg_shapes=[list(t.shape) for t in tensors], duration_s=round(duration, 4),
                            output_dir=record.output_dir, error=error)

    JitCallableWrapper.__call__ = launch
    rec.launch_seal = seal


def _patch_asserts(rec: Recorder) -> None:
    import numpy as np
    import numpy.testing

    np_original = numpy.testing.assert_allclose

    def np_assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 0, *args: Any,
                           **kwargs: Any) -> Any:
        _record_assert(rec, "numpy.testing.assert_allclose", actual, desired, rtol, atol)
        return np_original(actual, desired, rtol, atol, *args, **kwargs)

    numpy.testing.assert_allclose = np_assert_allclose
    np.testing.assert_allclose = np_assert_allclose

    torch_original = torch.testing.assert_close

    def torch_assert_close(actual: Any, expected: Any, *args: Any, **kwargs: Any) -> Any:
        rtol = kwargs.get("rtol")
        atol = kwargs.get("atol")
        if rtol is None or atol is None:
            rtol, atol = metrics.torch_default_tolerance(actual)
        _record_assert(rec, "torch.testing.assert_close", actual, expected, rtol, atol)
        return torch_original(actual, expected, *args, **kwargs)

    torch.testing.assert_close = torch_assert_close
    _patch_allclose(rec, torch, "torch.allclose")
    _patch_allclose(rec, np, "numpy.allclose")


# A script may call allclose in a loop; past this many recorded calls the rest are not recorded.
MAX_RETURNED_COMPARES = 200


def _patch_allclose(rec: Recorder, module: Any, api: str) -> None:
    """allclose returns its answer instead of raising: recorded with that answer, when it read a kernel output."""
    original = module.allclose

    def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
        result = original(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)  # both libraries' defaults
        if rec.observing and rec.launches and sum(1 for x in rec.asserts if x.get("returns")) < MAX_RETURNED_COMPARES:
            _record_returned(rec, api, a, b, float(rtol), float(atol), bool(result))
        return result

    module.allclose = allclose


def _record_returned(rec: Recorder, api: str, a: Any, b: Any, rtol: float, atol: float, result: bool) -> None:
    """An allclose call on a launch's output (plain SIM's unwritten one, or the graph's result), with its answer."""
    graph = _graph_source(rec, a, b, rtol, atol)
    if not graph.get("on_graph_result") and not graph.get("unwritten_output"):
        return  # not about a kernel's output (two goldens, or the NPU's own bytes): not a compare we judge
    try:
        m = metrics.compare(a, b, rtol, atol)
    except Exception as exc:  # noqa: BLE001 - evidence only: the answer below decides
        m = {"error": f"{type(exc).__name__}: {exc}"}
    m.update(kind="returned_compare", returned=result, rtol=rtol, atol=atol)  # runtime.judge.tolerance
    entry = {"api": api, "index": len(rec.asserts), "metrics": m, "launches_before": len(rec.launches),
             "returns": True, "graph": graph}
    rec.asserts.append(entry)
    rec.events.emit("assert", **entry)


def _record_assert(rec: Recorder, api: str, actual: Any, desired: Any, rtol: float, atol: float) -> None:
    try:
        m = metrics.compare(actual, desired, float(rtol), float(atol))
    except Exception as exc:  # noqa: BLE001 - the script's own assert still runs and decides
        m = {"error": f"{type(exc).__name__}: {exc}"}
    entry = {"api": api, "index": len(rec.asserts), "metrics": m, "launches_before": len(rec.launches)}
    if rec.launches:
        entry["graph"] = _graph_source(rec, actual, desired, float(rtol), float(atol))
    rec.asserts.append(entry)
    rec.events.emit("assert", **entry)


def scalar_compares(rec: Recorder) -> flow.Hook:
    """What records an `assert` deciding compare of a float read from a launch's output (runtime.evidence.flow)."""

    def record(value: flow.KernelFloat, op: str, bound: float, held: bool, where: str) -> None:
        launch = rec.launches[value.launch] if 0 <= value.launch < len(rec.launches) else None
        number = float(value)
        m = {"kind": "scalar_compare", "value": number if math.isfinite(number) else str(number), "op": op,
             "bound": bound, "held": held, "where": where[-300:]}
        entry: dict[str, Any] = {"api": "assert (compare of a float read from a kernel output)",
                                 "index": len(rec.asserts), "metrics": m, "launches_before": len(rec.launches)}
        if launch is not None:
            entry["graph"] = {"on_graph_result": rec.graph_on, "launch": value.launch, "kernel": launch.kernel,
                              "scalar": True}
        rec.asserts.append(entry)
        rec.events.emit("assert", **entry)

    return record


def _graph_source(rec: Recorder, actual: Any, desired: Any, rtol: float, atol: float) -> dict[str, Any]:
    """Which launch output the asserted value is (by value), and how the SIM garbage it replaced compares.

    With graph verify on, the output holds the tensor graph's result; SIM itself wrote nothing, so the
    bytes before the launch are what plain SIM would have left there (docs/realops.md §4). Scripts put the
    kernel's output on either side (`assert_allclose(golden, out)` too): the `actual` side is tried first.
    """
    first = _output_holding(rec, actual, desired, rtol, atol)
    if first.get("on_graph_result"):
        return first
    second = _output_holding(rec, desired, actual, rtol, atol)
    if second.get("on_graph_result") or ("unwritten_output" in second and "unwritten_output" not in first):
        return {**second, "side": "desired"}
    return first


def _output_holding(rec: Recorder, actual: Any, desired: Any, rtol: float, atol: float) -> dict[str, Any]:
    """`_graph_source` for one side: the launch output holding `actual`, compared with `desired`."""
    import numpy as np

    try:
        # via torch: numpy has no bfloat16 (pypto's attention example compares bf16 tensors)
        got = (actual.detach().cpu().to(torch.float64).numpy() if isinstance(actual, torch.Tensor)
               else np.asarray(actual, dtype=np.float64))
    except (TypeError, ValueError):
        return {"on_graph_result": False}
    unwritten: dict[str, Any] = {"on_graph_result": False}
    for index in range(len(rec.launches) - 1, -1, -1):
        launch = rec.launches[index]
        for arg, (tensor, written) in enumerate(zip(launch.args, launch.written)):
            before = launch.before[arg] if arg < len(launch.before) else None
            if before is None or tensor.numel() != got.size:
                continue
            now = tensor.detach().cpu().to(torch.float64).reshape(got.shape).numpy()
            if not np.array_equal(now, got, equal_nan=True):
                continue
            if not written:  # plain SIM: an output the kernel never wrote, unless a written one holds the same values
                if "unwritten_output" not in unwritten:  # (an input equal to its output: a cast of [2., 3.])
                    unwritten = {"on_graph_result": False, "unwritten_output": True, "launch": index, "arg": arg,
                                 "kernel": launch.kernel}
                continue
            if rec.graph_on:
                garbage = before.to(torch.float64).reshape(got.shape).numpy()
                try:
                    sim = metrics.compare(garbage, desired, rtol, atol)
                except Exception as exc:  # noqa: BLE001 - evidence only
                    sim = {"error": f"{type(exc).__name__}: {exc}"}
                return {"on_graph_result": True, "launch": index, "arg": arg, "kernel": launch.kernel,
                        "dtype": str(tensor.dtype).replace("torch.", ""), "sim_garbage": sim}
            return {"on_graph_result": False}
    return _sliced_holding(rec, got, desired, rtol, atol) or unwritten


def _sliced_holding(rec: Recorder, got: Any, desired: Any, rtol: float, atol: float) -> dict[str, Any] | None:
    """`_output_holding` for a tensor launched on row slices (runtime.evidence.row_slices): every slice's launch
    wrote its rows (a script's launch has all its slices launched), the whole holds `got`."""
    import numpy as np

    from runtime.evidence import row_slices

    for whole in rec.sliced_wholes:
        if whole.numel() != got.size:
            continue
        if not np.array_equal(whole.detach().cpu().to(torch.float64).reshape(got.shape).numpy(), got, equal_nan=True):
            continue
        sid = storage_id(whole)
        parts = [(i, arg) for i, launch in enumerate(rec.launches) for arg, s in enumerate(launch.storages) if s == sid]
        before = row_slices.before_whole(rec, whole) if parts else None
        if before is None or not all(rec.launches[i].written[arg] for i, arg in parts) or not rec.graph_on:
            continue
        try:
            sim = metrics.compare(before.to(torch.float64).reshape(got.shape).numpy(), desired, rtol, atol)
        except Exception as exc:  # noqa: BLE001 - evidence only
            sim = {"error": f"{type(exc).__name__}: {exc}"}
        index, arg = parts[-1]
        return {"on_graph_result": True, "launch": index, "arg": arg, "kernel": rec.launches[index].kernel,
                "dtype": str(whole.dtype).replace("torch.", ""), "sim_garbage": sim, "row_slices": len(parts)}
    return None
