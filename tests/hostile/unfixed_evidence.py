"""The harness functions as they were before issue 8 items 1, 2, 6 and 9, kept on purpose.

Each hostile test in test_evidence_*.py runs its attack through the real runtime and asserts it
is contained, then runs the same job dir or events through the matching function here and
asserts the attack works on it: proof that the test can fail. Never import this from runtime/.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

SIM_SUBDIR = "CostModelSimulationOutput"
CYCLES_PER_US = 1800.0


def tail(path: Path, chars: int = 8000) -> str:
    """outcome.tail: read the whole file, keep the end (item 9)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-chars:]


def read_plog(job_dir: Path) -> str:
    """outcome.read_plog: rglob + read_text, following every link (item 1)."""
    parts = []
    for path in sorted((job_dir / "logs").rglob("*.log")):
        try:
            parts.append(f"== {path.name}\n" + path.read_text(errors="replace")[-1_000_000:])
        except OSError:
            continue
    return "\n".join(parts)[-1_000_000:]


def collect_artifacts(job_dir: Path, launch_output_dirs: list[str], dest: Path) -> list[Path]:
    """artifacts.collect: copy logs and each launch's files, following links (item 1)."""
    copied = []

    def copy(src: Path, to: Path) -> None:
        if src.is_file() and src.stat().st_size <= 20 * 1024 * 1024:
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, to)
            copied.append(to)

    copy(job_dir / "stdout.txt", dest / "stdout.txt")
    for plog in sorted((job_dir / "logs").rglob("*.log")):
        copy(plog, dest / "plog" / plog.name)
    for index, folder in enumerate(launch_output_dirs):
        if folder and Path(folder).is_dir():
            for name in ("_simulate.swim.json", "_simulate.stat.report.txt", "merged_swimlane.json"):
                copy(Path(folder) / SIM_SUBDIR / name, dest / f"launch{index}" / name)
    return copied


def write_trace(output_dir: Path) -> Path | None:
    """costmodel.write_trace: write into a folder named by a launch event, through any link (item 2)."""
    target = output_dir / SIM_SUBDIR / "merged_swimlane.json"
    if target.exists():
        return target
    try:
        cores = json.loads((output_dir / SIM_SUBDIR / "_simulate.swim.json").read_text())
    except (OSError, ValueError):
        return None
    events = [{"ph": "X", "tid": int(c.get("blockIdx", 0)), "ts": t["execStart"] / CYCLES_PER_US,
               "dur": (t["execEnd"] - t["execStart"]) / CYCLES_PER_US}
              for c in cores if c.get("tasks") for t in c["tasks"]]
    target.write_text(json.dumps({"traceEvents": events}))
    return target


def verdict(events: list[dict[str, Any]], mode: str) -> str:
    """outcome.build + verdicts.decide for a package case without graph verify (item 6).

    Launches are the job's launch events, metrics and provenance its first result event, and a
    SIM case whose output was "written" and matches is a pass.
    """
    launches = [e for e in events if e["event"] == "launch"]
    result = next((e for e in events if e["event"] == "result"), None)
    metrics = result["metrics"] if result else None
    provenance = result.get("provenance", []) if result else []
    written = all(p.get("written") for p in provenance) if provenance else False
    matches = bool(metrics and metrics.get("shape_match") and metrics.get("mismatch_count") == 0
                   and metrics.get("nan_count") == 0)
    if not launches:
        return "suspect_fake_pass" if matches else "not_run"
    if matches and not written:
        return "suspect_fake_pass"
    if mode == "sim":
        if not (metrics and metrics.get("shape_match")):
            return "structural_error"
        if not written:
            return "sim_output_unwritten"
    return "pass" if matches else "precision_fail"
