"""Collect a report's evidence files (logs, cost model, verify CSVs) into one folder per case."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from runtime import costmodel
from runtime.report import Report

COST_FILES = (costmodel.SWIM_FILE, costmodel.STAT_FILE, costmodel.TRACE_FILE, "_simulate.pipe.swim.json",
              "bubble_analysis.log")
MAX_FILE_BYTES = 20 * 1024 * 1024


def case_dirname(index: int, case: str) -> str:
    return f"{index:03d}-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", case)[:80]


def _copy(src: Path, dest: Path) -> None:
    if src.is_file() and src.stat().st_size <= MAX_FILE_BYTES:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


def collect(report: Report, dest: Path) -> list[str]:
    """Copy each case's artifacts under dest/<NNN-case>/; returns the relative paths written."""
    dest.mkdir(parents=True, exist_ok=True)
    for index, case in enumerate(report.cases):
        if not case.job_dir:
            continue
        job = Path(case.job_dir)
        out = dest / case_dirname(index, case.case)
        _copy(job / "stdout.txt", out / "stdout.txt")
        _copy(job / "stderr.txt", out / "stderr.txt")
        for plog in sorted((job / "logs").rglob("*.log")):
            _copy(plog, out / "plog" / plog.name)
        for launch_index, launch in enumerate(case.launches):
            if not launch.output_dir or not Path(launch.output_dir).is_dir():
                continue
            folder = Path(launch.output_dir)
            prefix = out / f"launch{launch_index}"
            for name in COST_FILES:
                _copy(costmodel.sim_dir(folder) / name, prefix / name)
            for csv in sorted(folder.glob("verify_*/*.csv")):
                _copy(csv, prefix / "verify" / csv.name)
            lanes = costmodel.lanes(folder)
            if lanes:
                (prefix / "lanes.json").write_text(json.dumps(lanes))
    return sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
