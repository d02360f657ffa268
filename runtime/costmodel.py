"""Read the SIM cost model files of one kernel call (docs/pypto.md §2)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runtime.report import CostModel

CYCLES_PER_US = 1800.0  # the simulator's 1.8 GHz clock
SIM_SUBDIR = "CostModelSimulationOutput"
SWIM_FILE = "_simulate.swim.json"
STAT_FILE = "_simulate.stat.report.txt"
TRACE_FILE = "merged_swimlane.json"
AICORE_TYPES = ("AIC", "AIV")


def sim_dir(output_dir: Path) -> Path:
    return output_dir / SIM_SUBDIR


def read_swim(output_dir: Path) -> list[dict[str, Any]] | None:
    path = sim_dir(output_dir) / SWIM_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, list) else None


def _stat_value(text: str, label: str) -> int | None:
    match = re.search(rf"^\s*\|?-*{re.escape(label)}\.*:\s*([0-9]+)", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def parse(output_dir: Path) -> CostModel | None:
    """The cost model of one SIM call, or None when the files are missing."""
    cores = read_swim(output_dir)
    if cores is None:
        return None
    lanes = [c for c in cores if c.get("coreType") in AICORE_TYPES]
    tasks = [t for c in lanes for t in c.get("tasks") or []]
    if tasks:
        start = min(t["execStart"] for t in tasks)
        end = max(t["execEnd"] for t in tasks)
        span = max(end - start, 0)
        busy = sum(t["execEnd"] - t["execStart"] for t in tasks)
        aicore_us = span / CYCLES_PER_US
        utilization = busy / (len(lanes) * span) if span and lanes else 0.0
    else:
        aicore_us, utilization = 0.0, 0.0
    try:
        stat = (sim_dir(output_dir) / STAT_FILE).read_text()
    except OSError:
        stat = ""
    total_cycles = _stat_value(stat, "Total Cycles")
    aic = _stat_value(stat, "Cube Tasks")
    aiv = _stat_value(stat, "Vector Tasks")
    count = {kind: sum(len(c.get("tasks") or []) for c in lanes if c.get("coreType") == kind) for kind in AICORE_TYPES}
    files = sorted(p.name for p in sim_dir(output_dir).iterdir() if p.is_file())
    return CostModel(
        aicore_time_us=round(aicore_us, 4),
        utilization=round(utilization, 6),
        total_cycles=total_cycles if total_cycles is not None else (span if tasks else 0),
        aic_tasks=aic if aic is not None else count["AIC"],
        aiv_tasks=aiv if aiv is not None else count["AIV"],
        output_dir=str(output_dir),
        files=files,
    )


def write_trace(output_dir: Path) -> Path | None:
    """Write merged_swimlane.json (Chrome/Perfetto trace, µs) from the swim file when pypto did not.

    We run the simulator with its drawing scripts silenced (they cost time and need matplotlib),
    and those scripts are what normally writes this file.
    """
    target = sim_dir(output_dir) / TRACE_FILE
    if target.exists():
        return target
    cores = read_swim(output_dir)
    if cores is None:
        return None
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "AICore (SIM cost model)"}}
    ]
    for core in cores:
        if core.get("coreType") not in AICORE_TYPES or not core.get("tasks"):
            continue
        tid = int(core.get("blockIdx", 0))
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                       "args": {"name": f"{core['coreType']}_{tid}"}})
        for task in core["tasks"]:
            events.append({
                "ph": "X", "pid": 1, "tid": tid, "name": f"task {task.get('taskId')}",
                "ts": task["execStart"] / CYCLES_PER_US,
                "dur": (task["execEnd"] - task["execStart"]) / CYCLES_PER_US,
                "args": {k: v for k, v in task.items() if k not in ("execStart", "execEnd")},
            })
    target.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    return target


def lanes(output_dir: Path) -> list[dict[str, Any]]:
    """Per-core task intervals in µs, for the dashboard's timeline."""
    cores = read_swim(output_dir) or []
    out = []
    for core in cores:
        if core.get("coreType") in AICORE_TYPES and core.get("tasks"):
            out.append({
                "core": f"{core['coreType']}_{core.get('blockIdx', 0)}",
                "type": core["coreType"],
                "tasks": [[t["execStart"] / CYCLES_PER_US, t["execEnd"] / CYCLES_PER_US, t.get("taskId")]
                          for t in core["tasks"]],
            })
    return out
