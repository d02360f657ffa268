"""`crosscheck run OPDIR --format gym`: the gym verifier's three JSON files, from our evidence (docs/kernelbench.md §4).

verify_run.json (the verifier's run), cheat_check_script.json (its mechanical check) and skill_report.json
(the review's final_verdict and failure_category), written where a benchmark pipeline reads them. The cheat
classes are decided from the job's data flow and launch records, not read from text; a class no evidence
decides is `not_checked`, never `pass`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runtime.judge import kernelbench, run_options
from runtime.lint import gym_cheats
from runtime.report import CaseResult, Report

S8_TEXT = re.compile(r"compile_stage|disable_pass")
_MACHINE = {"PASS": "pass", "FAIL_CHEAT": "failed_cheat", "FAIL_CORRECTNESS": "failed_correctness",
            "BASELINE_FAILED": "failed_correctness"}


def sources(root: Path, files: list[str], op: str) -> list[Path]:
    names = {f"{op}_impl.py", f"{op}_pypto_impl.py"}
    return [root / f for f in files if Path(f).name in names]


def _semantic(case: CaseResult, cheats: dict[str, Any], files: list[Path]) -> dict[str, Any]:
    rules = {d.rule for d in case.diagnosis}
    launched = kernelbench.kernels(case)
    unwritten = "output-not-written" in rules or "not the kernel's" in case.verdict_reason
    fake = case.verdict == "suspect_fake_pass"

    def item(sid: str, status: str, evidence: str) -> dict[str, str]:
        return {"id": sid, "status": status, "evidence": evidence}

    hits = next((c["extra"].get("hits", []) for c in cheats["checks"] if c["name"] == "forbidden_text_patterns"), [])
    items = [
        item("S1", "fail" if fake and unwritten else "pass" if case.output_written or _graph_ok(case) else "not_checked",
             "the compared output was not written by a jit launch" if fake and unwritten
             else "the compared output came from a jit launch" if _graph_ok(case) else "no launch evidence"),
        item("S2", "fail" if fake and not launched else "pass" if launched else "not_checked",
             f"{len(launched)} jit kernel(s) launched in the forward: {', '.join(launched) or 'none'}"),
        item("S3", "fail" if "golden-fallback" in rules else "pass", "lint: a try/except returns torch maths"
             if "golden-fallback" in rules else "no fallback around the kernel call"),
        _s4(case),
        item("S5", "fail" if len(launched) > 1 else "pass" if launched else "not_checked",
             f"{len(launched)} distinct jit kernel(s) per forward"),
        item("S6", "fail" if fake and unwritten else "pass" if _graph_ok(case) else "not_checked",
             "graph verify computed the output from the kernel's graph" if _graph_ok(case) else case.verdict_reason),
        _s8(case, files),
        item("S9", "suspicious" if hits else "pass", "; ".join(hits) or "no suspicious text"),
    ]
    verdict = "cheat" if any(i["status"] == "fail" for i in items) else \
        "suspicious" if any(i["status"] == "suspicious" for i in items) else "pass"
    return {"verdict": verdict, "items": items, "reasoning": "decided from the job's launches and data flow"}


def _s4(case: CaseResult) -> dict[str, str]:
    """From the job's data flow: torch ops that computed values outside the kernel (runtime.evidence.flow)."""
    found = (case.evidence or {}).get("outside_maths") or []
    if found:
        return {"id": "S4", "status": "fail", "evidence": "; ".join(
            f"{f['op']} {'after' if f['side'] == 'after' else 'before'} the kernel"
            + (f" at {f['where']}" if f.get("where") else "") for f in found)}
    if case.launches and case.verdict in ("sim_garbage_graph_ok", "pass", "graph_fail", "precision_fail"):
        return {"id": "S4", "status": "pass", "evidence": "only moves, views and casts ran outside the kernel"}
    return {"id": "S4", "status": "not_checked", "evidence": "no forward ran to the end"}


def _s8(case: CaseResult, files: list[Path]) -> dict[str, str]:
    """From the options each launch ran under (runtime.judge.run_options), with the source lines that set them."""
    lines = [f"{p.name}:{i}" for p in files for i, line in
             enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1) if S8_TEXT.search(line)]
    where = f" ({', '.join(lines[:5])})" if lines else ""
    options = (case.evidence or {}).get("run_options")
    if options:
        return {"id": "S8", "status": "fail", "evidence": "launched under options that skip work: "
                + run_options.said(options) + where}
    if case.launches:
        return {"id": "S8", "status": "suspicious" if lines else "pass", "evidence":
                f"every launch ran with pypto's stock compile stage and passes; the sources name them{where}"
                if lines else "every launch ran with pypto's stock compile stage and passes"}
    return {"id": "S8", "status": "not_checked", "evidence": "no launch ran"}


def _graph_ok(case: CaseResult) -> bool:
    return case.verdict in ("sim_garbage_graph_ok", "pass")


def _correctness(case: CaseResult) -> dict[str, Any]:
    if case.verdict in ("sim_garbage_graph_ok", "pass"):
        status = "passed"
    elif case.verdict in ("graph_fail", "precision_fail", "structural_error", "crash", "suspect_fake_pass"):
        status = "failed"
    else:
        status = "error"
    graph = case.graph_verify or {}
    return {"status": status, "duration_sec": case.duration_s, "log_excerpt": case.verdict_reason,
            "evidence": "graph verify (the kernel's tensor graph on the CPU)" if graph.get("status") else case.verdict,
            "graph_metrics": graph.get("metrics"), "crosscheck_verdict": case.verdict}


def write(report: Report, root: Path, files: list[str], task: str, out_dir: Path) -> list[Path]:
    """The three files for the report's case (a task has one), in `out_dir`."""
    op = report.submission.name
    case = report.cases[0]
    cheats = gym_cheats.check(sources(root, files, op), op)
    final, category, reasoning = kernelbench.gym_verdict(case, cheats)
    cost = case.cost_model
    performance = {"status": "skipped", "cheat_multi_kernel": len(kernelbench.kernels(case)) > 1,
                   "gen_time_us": None, "aicore_estimate_us": cost.aicore_time_us if cost else None,
                   "log_excerpt": "timing is the NPU's; SIM's cost model estimates the AICore time"}
    correctness = _correctness(case)
    verify_run = {"op_name": op, "op_dir": str(root), "task_id": Path(task).stem, "mode": "correctness",
                  "cheat_check": cheats, "correctness": correctness, "performance": performance,
                  "verdict_machine": _MACHINE.get(final, "error"), "crosscheck": {"mode": report.mode}}
    skill = {"op_name": op, "op_dir": str(root), "task_desc_file": str(root / task), "mode": "correctness",
             "skill_version": "crosscheck", "cheat_check_script": cheats, "cheat_check_semantic": _semantic(case, cheats, sources(root, files, op)),
             "correctness": correctness, "performance": performance, "final_verdict": final,
             "failure_category": category, "final_reasoning": reasoning}
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, body in (("verify_run.json", verify_run), ("cheat_check_script.json", cheats),
                       ("skill_report.json", skill)):
        path = out_dir / name
        path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written
