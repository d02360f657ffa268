"""The gym's own verdicts of a benchmark run, as NPU results for upload beside our SIM ones (docs/kernelbench.md §5).

A run's report dir keeps, per task, `result.json` (the gym's overall status) and `.skill_validate/skill_report.json`
(the review's `final_verdict`), both written on an NPU host. Each becomes one NPU case of a runtime report,
uploaded with its provenance: the source is the gym's file, and the fingerprint lacks CANN and the card
(the gym does not record them), so the server stores it as an unverified upload. A task the gym could not
judge (ERROR, a failed generation) uploads nothing: there is no verdict to hold ours against.
"""
from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from runtime import verdicts as v
from runtime.report import CaseResult, Environment, Report, Submission

# The gym's final_verdict (or result.json's overall_status) -> our NPU verdict.
VERDICT = {"PASS": v.PASS, "success": v.PASS, "FAIL_CORRECTNESS": v.PRECISION_FAIL, "verify_failed": v.PRECISION_FAIL,
           "FAIL_CHEAT": v.SUSPECT_FAKE_PASS, "BASELINE_FAILED": v.NOT_RUN, "baseline_failed": v.NOT_RUN}
SKILL_REPORT = Path(".skill_validate") / "skill_report.json"
MAX_BYTES = 1024 * 1024


def _json(path: Path) -> dict[str, Any] | None:
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_BYTES:
            data = json.loads(path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None
    return None


def gym_verdict(case_dir: Path) -> tuple[str, str] | None:
    """(the gym's word, where it was read) for one task's report dir, or None."""
    skill = _json(case_dir / SKILL_REPORT) or {}
    if isinstance(skill.get("final_verdict"), str):
        return skill["final_verdict"], SKILL_REPORT.as_posix()
    result = _json(case_dir / "result.json") or {}
    if isinstance(result.get("overall_status"), str):
        return result["overall_status"], "result.json"
    return None


def report(checkout: Path, operator: Any, sha256: str) -> dict[str, Any] | None:
    """The NPU report of one benchmark operator's gym verdict, or None when the gym gave none we can map."""
    case_dir = (Path(checkout) / operator.folder).parent.parent  # report/<level>/<op>/custom/<op>/ -> report/<level>/<op>/
    found = gym_verdict(case_dir)
    if found is None or found[0] not in VERDICT:
        return None
    word, source = found
    case = CaseResult(operator=operator.name, case="task", verdict=VERDICT[word], structural="ok",
                      verdict_reason=f"the gym's verifier on an NPU: {word} ({source})", stage="npu",
                      precision="pass" if VERDICT[word] == v.PASS else "fail" if VERDICT[word] == v.PRECISION_FAIL
                      else "not_applicable")
    env = Environment(pypto="unknown (the gym's result.json does not record it)", torch="unknown",
                      python=platform.python_version(), host="the gym's NPU host", cann=None)
    return Report(submission=Submission(kind="package", name=operator.name, sha256=sha256, files=operator.files),
                  mode="npu", environment=env, cases=[case]).to_dict()


def upload(api: Any, checkout: Path, operators: list[Any], suite: str, run_key: str,
           labels: dict[str, str]) -> tuple[int, str]:
    """Send each operator's gym verdict into this suite run as an NPU upload: (how many were sent, why it
    stopped, or "")."""
    from client.api_client import Forbidden
    from runtime.intake.benchmark_run import content_sha256

    params: dict[str, Any] = {"suite": suite, "run_key": run_key, "attempt": 1,
                              "label": [f"{k}={v}" for k, v in labels.items() if k not in ("branch", "commit", "pipeline")],
                              **{k: labels[k] for k in ("branch", "commit", "pipeline") if k in labels}}
    sent = 0
    for op in operators:
        body = report(checkout, op, content_sha256(checkout, op))
        if body is None:
            continue
        try:
            api.json("POST", "/ingest/report", params=params, content=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        except Forbidden as exc:  # a token without the upload scope: our verdicts stand alone
            return sent, str(exc)
        sent += 1
    return sent, ""
