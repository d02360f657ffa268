"""Collect a report's evidence files (logs, cost model, verify CSVs) into one folder per case.

Each case's files were already copied out of its job dir, checked and capped, by its leader
(runtime.evidence.evidence) into a folder only the harness owns; this gathers those folders, within a
total budget the service accepts. Nothing here opens a file in a job dir.
"""
from __future__ import annotations

import re
from pathlib import Path

from runtime.evidence import costmodel, evidence
from runtime.fence.jobfiles import JobFiles, Sink
from runtime.report import Report

COST_FILES = (*evidence.COST_FILES, costmodel.TRACE_FILE)
MAX_FILE_BYTES = evidence.MAX_EVIDENCE_FILE_BYTES
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # the service refuses more than 1 GiB unpacked
MAX_FILES = 4000  # ... and more than 5000 files


def case_dirname(index: int, case: str) -> str:
    return f"{index:03d}-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", case)[:80]


def collect(report: Report, dest: Path) -> list[str]:
    """Copy each case's evidence folder under dest/<NNN-case>/; returns the relative paths written."""
    written: list[str] = []
    total = 0
    with Sink.open(dest) as sink:
        for index, case in enumerate(report.cases):
            if not case.evidence_dir or not Path(case.evidence_dir).is_dir():
                continue
            source = JobFiles(case.evidence_dir)
            prefix = case_dirname(index, case.case)
            for entry in source.walk():
                if len(written) >= MAX_FILES or total + entry.size > MAX_TOTAL_BYTES:
                    return sorted(written)
                rel = f"{prefix}/{entry.rel}"
                if source.copy(entry.rel, sink, rel, MAX_FILE_BYTES):
                    written.append(rel)
                    total += entry.size
    return sorted(written)
