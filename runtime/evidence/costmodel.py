"""The SIM cost model of one kernel call, read from pypto's call folder (docs/pypto.md §2).

The files sit in a folder the kernel controls: they are read through runtime.fence.jobfiles with caps,
parsed as untrusted data, and what we derive from them (the Perfetto trace, the lanes) is
returned as data for the harness to write into its own folder, never next to them.
"""
from __future__ import annotations

import json
import re
from typing import Any

from runtime.fence.jobfiles import JobFiles
from runtime.report import CostModel

CYCLES_PER_US = 1800.0  # the simulator's 1.8 GHz clock
SIM_SUBDIR = "CostModelSimulationOutput"
SWIM_FILE = "_simulate.swim.json"
STAT_FILE = "_simulate.stat.report.txt"
TRACE_FILE = "merged_swimlane.json"
AICORE_TYPES = ("AIC", "AIV")
MAX_SWIM_BYTES = 64 * 1024 * 1024
MAX_STAT_BYTES = 1024 * 1024


def sim_rel(call: str) -> str:
    """The cost-model folder of a call folder, relative to the job's output dir."""
    return f"{call}/{SIM_SUBDIR}"


def parse_swim(data: bytes) -> list[dict[str, Any]] | None:
    """The swim file's cores, keeping only well-formed AIC/AIV tasks; None when it is not a swim file."""
    try:
        raw = json.loads(data)
    except ValueError:
        return None
    if not isinstance(raw, list):
        return None
    cores = []
    for core in raw:
        if not isinstance(core, dict):
            return None
        tasks = [t for t in core.get("tasks") or [] if isinstance(t, dict) and _number(t.get("execStart"))
                 and _number(t.get("execEnd"))]
        cores.append({**core, "tasks": tasks})
    return cores


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_swim(files: JobFiles, call: str) -> list[dict[str, Any]] | None:
    data = files.read_or_none(f"{sim_rel(call)}/{SWIM_FILE}", MAX_SWIM_BYTES)
    return parse_swim(data) if data is not None else None


def _stat_value(text: str, label: str) -> int | None:
    match = re.search(rf"^\s*\|?-*{re.escape(label)}\.*:\s*([0-9]+)", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def summarize(cores: list[dict[str, Any]], stat: str, files: list[str], output_dir: str) -> CostModel:
    """Time, utilisation and task counts of one call (the figures pypto prints)."""
    lanes_ = [c for c in cores if c.get("coreType") in AICORE_TYPES]
    tasks = [t for c in lanes_ for t in c["tasks"]]
    span = 0.0
    if tasks:
        start = min(t["execStart"] for t in tasks)
        end = max(t["execEnd"] for t in tasks)
        span = max(end - start, 0)
        busy = sum(t["execEnd"] - t["execStart"] for t in tasks)
        aicore_us = span / CYCLES_PER_US
        utilization = busy / (len(lanes_) * span) if span and lanes_ else 0.0
    else:
        aicore_us, utilization = 0.0, 0.0
    total_cycles = _stat_value(stat, "Total Cycles")
    aic = _stat_value(stat, "Cube Tasks")
    aiv = _stat_value(stat, "Vector Tasks")
    count = {kind: sum(len(c["tasks"]) for c in lanes_ if c.get("coreType") == kind) for kind in AICORE_TYPES}
    return CostModel(
        aicore_time_us=round(aicore_us, 4),
        utilization=round(utilization, 6),
        total_cycles=total_cycles if total_cycles is not None else int(span),
        aic_tasks=aic if aic is not None else count["AIC"],
        aiv_tasks=aiv if aiv is not None else count["AIV"],
        output_dir=output_dir,
        files=files,
    )


def parse(files: JobFiles, call: str) -> CostModel | None:
    """The cost model of the call folder `call` under `files`, or None when its swim file is missing."""
    cores = read_swim(files, call)
    if cores is None:
        return None
    stat = (files.read_or_none(f"{sim_rel(call)}/{STAT_FILE}", MAX_STAT_BYTES) or b"").decode("utf-8", "replace")
    names = [name for name, kind in files.listdir(sim_rel(call)) if kind == "file"]
    return summarize(cores, stat, names, str(files.root / call))


def trace(cores: list[dict[str, Any]]) -> dict[str, Any]:
    """A Chrome/Perfetto trace (µs) of the swim file, what pypto's drawing scripts would write.

    We run the simulator with those scripts silenced (they cost time and need matplotlib).
    """
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "AICore (SIM cost model)"}}
    ]
    for core in cores:
        if core.get("coreType") not in AICORE_TYPES or not core["tasks"]:
            continue
        tid = _int(core.get("blockIdx"))
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                       "args": {"name": f"{core['coreType']}_{tid}"}})
        for task in core["tasks"]:
            events.append({
                "ph": "X", "pid": 1, "tid": tid, "name": f"task {task.get('taskId')}",
                "ts": task["execStart"] / CYCLES_PER_US,
                "dur": (task["execEnd"] - task["execStart"]) / CYCLES_PER_US,
                "args": {k: v for k, v in task.items() if k not in ("execStart", "execEnd")},
            })
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def lanes(cores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-core task intervals in µs, for the dashboard's timeline."""
    out = []
    for core in cores:
        if core.get("coreType") in AICORE_TYPES and core["tasks"]:
            out.append({
                "core": f"{core['coreType']}_{_int(core.get('blockIdx'))}",
                "type": core["coreType"],
                "tasks": [[t["execStart"] / CYCLES_PER_US, t["execEnd"] / CYCLES_PER_US, t.get("taskId")]
                          for t in core["tasks"]],
            })
    return out


def _int(value: Any) -> int:
    return int(value) if _number(value) else 0
