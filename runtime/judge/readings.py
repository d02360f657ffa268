"""What a finished job left, read into plain values: its logs, launches, cost model, timing, the
script's own markers and the last exception in its output (runtime.judge.outcome judges them)."""
from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Any

from runtime.fence.jobfiles import JobFiles
from runtime.report import CostModel, Launch
from runtime.judge.tolerance import SCALAR_COMPARE, assert_passed

MAX_LOG_BYTES = 1024 * 1024  # of stdout and stderr, read for diagnosis and script markers
MAX_PLOG_BYTES = 1024 * 1024
MARKER_PATTERNS = {
    "precision_pass": re.compile(r"\[PRECISION_PASS\]"),
    "precision_fail": re.compile(r"\[PRECISION_FAIL\]"),
}
MAX_DIFF = re.compile(r"max[ _]?diff(?:erence)?\s*[:=]\s*([-+0-9.eE]+|nan|inf)", re.IGNORECASE)


def read_logs(found: dict[str, Any]) -> tuple[str, str, str]:
    """stdout, stderr and plog tails from the case's evidence folder (copied there by its leader)."""
    folder = found.get("dir")
    if not folder:
        return "", "", ""
    files = JobFiles(folder)
    stdout = files.text_tail("stdout.txt", MAX_LOG_BYTES)
    stderr = files.text_tail("stderr.txt", MAX_LOG_BYTES)
    parts = [f"== {PurePosixPath(e.rel).name}\n" + files.text_tail(e.rel, MAX_PLOG_BYTES)
             for e in files.walk("plog", suffix=".log")]
    return stdout, stderr, "\n".join(parts)[-MAX_PLOG_BYTES:]


def cost_model(found: dict[str, Any]) -> CostModel | None:
    """The SIM cost model of the corroborated launches, as the leader read it from pypto's files."""
    models = [CostModel(**m) for m in found.get("cost_models") or []]
    if not models:
        return None
    if len(models) == 1:
        return models[0]
    total_us = sum(m.aicore_time_us for m in models)
    return CostModel(
        aicore_time_us=round(total_us, 4),
        utilization=round(sum(m.utilization * m.aicore_time_us for m in models) / total_us, 6) if total_us else 0.0,
        total_cycles=sum(m.total_cycles for m in models),
        aic_tasks=sum(m.aic_tasks for m in models),
        aiv_tasks=sum(m.aiv_tasks for m in models),
        output_dir=models[-1].output_dir,
        files=models[-1].files,
    )


def script_evidence(events: list[dict[str, Any]], stdout: str) -> dict[str, Any]:
    asserts = [e for e in events if e.get("event") == "assert" and isinstance(e.get("metrics") or {}, dict)]
    passed = failed = 0
    for a in asserts:
        if assert_passed(a.get("metrics") or {}):
            passed += 1
        else:
            failed += 1
    markers = {k: len(p.findall(stdout)) for k, p in MARKER_PATTERNS.items()}
    max_diffs = [m.group(1) for m in MAX_DIFF.finditer(stdout)]
    result = next((e for e in events if e.get("event") == "script_result"), {})
    unwritten = sum(1 for a in asserts if not assert_passed(a.get("metrics") or {})
                    and isinstance(a.get("graph"), dict) and a["graph"].get("unwritten_output") is True)
    return {"exit_code": result.get("exit_code"), "asserts": asserts, "asserts_passed": passed,
            "asserts_failed": failed, "asserts_failed_unwritten": unwritten, "markers": markers,
            "max_diff_printed": max_diffs[-10:]}


def number(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def launch(e: dict[str, Any]) -> Launch:
    """A launch event as the job reported it (untrusted: every field coerced)."""
    written = e.get("output_written")
    shapes = e.get("arg_shapes")
    return Launch(kernel=str(e.get("kernel", ""))[:200],
                  output_written=[bool(w) for w in written] if isinstance(written, list) else [],
                  arg_shapes=[list(s) for s in shapes if isinstance(s, list)] if isinstance(shapes, list) else [],
                  duration_s=number(e.get("duration_s")), output_dir=str(e.get("output_dir", ""))[:4096],
                  error=str(e.get("error", ""))[:2000])


def timing(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The timing the case asked for (runtime/job/timing.py), or why there is none."""
    ev = next((e for e in events if e["event"] == "timing"), None)
    if ev is not None:
        return {k: v for k, v in ev.items() if k != "event"}
    failed = next((e for e in events if e["event"] == "stage" and e["name"] == "timing" and e["status"] == "error"),
                  None)
    if failed is not None:
        return {"status": "error", "error": (failed.get("error") or {}).get("message", "")}
    return None


def worst_assert(asserts: list[dict[str, Any]]) -> dict[str, Any] | None:
    usable = [a["metrics"] for a in asserts if a.get("metrics") and "error" not in a["metrics"]
              and a["metrics"].get("kind") != SCALAR_COMPARE
              and isinstance(a["metrics"].get("max_abs_diff"), (int, float, type(None)))]
    if not usable:
        return None
    return max(usable, key=lambda m: (m.get("max_abs_diff") is None, m.get("max_abs_diff") or 0.0))


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit)): (.+)$", re.M)


def last_exception(text: str) -> tuple[str, str] | None:
    """(type, message) of the last `SomeError: message` line a traceback printed, else None."""
    found = _EXCEPTION_LINE.findall(text)
    if not found:
        return None
    kind, message = found[-1]
    return kind.rsplit(".", 1)[-1], message.strip()


_PARSER_ERROR = re.compile(r"^ERROR (\S+\.py):(\d+):\d+:", re.M)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parser_location(text: str, src_dir: str) -> tuple[str, int]:
    """The kernel line pypto's jit parser printed its error at (`ERROR path:line:col: ...`), inside the job's files."""
    found = [m for m in _PARSER_ERROR.finditer(_ANSI.sub("", text)) if m[1].startswith(src_dir.rstrip("/") + "/")]
    if not found:
        return "", 0
    return os.path.relpath(found[-1][1], src_dir), int(found[-1][2])
