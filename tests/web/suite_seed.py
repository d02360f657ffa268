"""Two nightly runs of one suite, made through the real services (tests only).

Run 1 (main, aaa1111): alpha passes SIM, beta's second case fails, gone is there.
Run 2 (main, bbb2222): alpha's first case crashes (a regression), beta is fixed and its first case's
SIM cost estimate is 30 % up (a performance regression), fresh is new, gone vanished; an NPU lab uploads alpha's NPU results (verified) and gamma's (no device: unverified).
"""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from server.blobs import BlobStore
from server.config import Settings
from server.models import Job
from server.services import (
    ingest,
    results,
    submissions,
    suite_runs,
    suite_submit,
    workers,
)
from server.services import jobs as job_service
from tests.server.suites import scale_add, sim_report, versions, zip_files

C1, C2 = "scale_add_32x64", "scale_add_64x256"
WORKER = "ci-worker@web"


def _run(session: Session, blobs: BlobStore, settings: Settings, commit: str,
         ops: dict[str, dict[str, str]], slower: dict[str, float] | None = None, suite: str = "nightly",
         diffs: dict[str, dict[str, float]] | None = None) -> int:
    """One finished run of `suite`: each operator's SIM job stored with its planted verdicts, its first case's
    cost estimate times slower[op], its graph verify max |diff| per case from diffs[op]."""
    run, _ = suite_runs.open_run(session, suite, f"pipe-{commit}", {"branch": "main", "commit": commit,
                                 "pipeline": f"https://ci.example/pipelines/{commit}"}, ["sim"], False, "ci-bot", False)
    files = scale_add()
    for name, planted in ops.items():
        out = suite_submit.submit_operator(session, blobs, settings, run, submissions.NewSubmission(
            filename=f"{name}.zip", data=zip_files(files), operator=name, submitted_by="ci-bot"))
        for job in out.jobs:
            session.flush()
            assert job_service.claim(session, job.id, WORKER, 1)
            session.refresh(job)
            report = sim_report(files, name, verdicts=planted, graph_diffs=(diffs or {}).get(name))
            for case in report["cases"]:
                if case["case"] == C1 and name in (slower or {}):
                    case["cost_model"]["aicore_time_us"] *= (slower or {})[name]
            assert results.store(session, blobs, session.get(Job, job.id), 1, report)
    suite_runs.close(session, run)
    return run.id


def seed(session: Session, blobs: BlobStore, settings: Settings) -> dict[str, Any]:
    workers.heartbeat(session, WORKER, "web", ["sim"], {"versions": versions()}, None)
    first = _run(session, blobs, settings, "aaa1111", {"alpha": {}, "beta": {C2: "structural_error"}, "gone": {}})
    second = _run(session, blobs, settings, "bbb2222", {"alpha": {C1: "crash"}, "beta": {}, "fresh": {}},
                  {"beta": 1.3})
    for op, env in (("alpha", {"device": "npu:3"}), ("gamma", {})):
        report = sim_report(scale_add(), op)
        report["mode"] = "npu"
        report["environment"].update({"cann": "8.0.RC3", **env})
        for case in report["cases"]:
            case.update(verdict="pass", precision="pass", output_written=True, graph_verify=None)
            case["metrics"] = {**case["metrics"], "max_abs_diff": 2.5e-4, "atol": 1e-3}
        ingest.store(session, blobs, ingest.Upload(
            suite="nightly", run_key="pipe-bbb2222", attempt=1, labels={}, mode="npu",
            environment=report["environment"], cases=report["cases"], kind="report", filename=f"{op}.json",
            raw=json.dumps(report).encode(), content_sha256={op: report["submission"]["sha256"]}), "npu-lab", True)
    return {"first": first, "second": second}
