"""Seed a migrated database with realistic results, through the real services.

Reports are real `crosscheck run` outputs of the examples (SIM, on a CPU host, log tails trimmed)
in tests/web/data; the NPU reports are derived from them as an NPU host would answer.
"""
from __future__ import annotations

import copy
import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from runtime.job.timing import summarize
from server.blobs import BlobStore
from server.config import Settings
from server.models import Job
from server.services import jobs as job_service
from server.services import results, submissions, tokens, workers

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# A known-benign pypto log line, as runtime.judge.diagnose reports it: a footnote, never a card.
NOISE_DIAGNOSIS = {"rule": "noise-graph-verify-index", "cause": "benign", "fix": "nothing", "sim_only": False,
                   "stage": "compare", "evidence": "verify index out of range (benign)", "origin": "plog",
                   "file": "", "line": 0}
LONG_NAME = "fused_attention_with_rotary_embedding_and_causal_mask_for_very_long_sequences_" + "x" * 40


def sim_report(example: str, operator: str | None = None) -> dict[str, Any]:
    report = json.loads((DATA / f"{example}.sim.json").read_text())
    if operator:
        for case in report["cases"]:
            case["operator"] = operator
    return report


def npu_report(sim: dict[str, Any], within: bool = True, diff: float = 2.4e-4) -> dict[str, Any]:
    """What an NPU run of the same kernel reports: outputs written, a real diff against atol."""
    report = copy.deepcopy(sim)
    report["mode"] = "npu"
    report["environment"]["cann"] = "8.0.RC3"
    for case in report["cases"]:
        m = case["metrics"] = dict(case.get("metrics") or {})
        m.update(max_abs_diff=diff if within else diff * 1e4, max_rel_diff=diff * 3, nan_count=0, inf_count=0,
                 mismatch_count=0 if within else 17,
                 mismatch_ratio=0.0 if within else 17 / (m.get("numel") or 2048),  # consistent: reports are checked
                 output_abs_max=m.get("golden_abs_max") or 7.7, shape_match=True, dtype_match=True,
                 atol=1e-3, rtol=1e-3)
        case.update(output_written=True, verdict="pass" if within else "precision_fail",
                    precision="pass" if within else "fail", graph_verify=None, cost_model=None, diagnosis=[],
                    verdict_reason="within tolerance" if within else "outside tolerance")
    return report


def bundle(example: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted((EXAMPLES / example).iterdir()):
            if path.is_file():
                zf.write(path, f"{example}/{path.name}")
    return buf.getvalue()


def submit_and_store(session: Session, blobs: BlobStore, settings: Settings, example: str,
                     reports: dict[str, dict[str, Any] | None], operator: str | None = None,
                     labels: dict[str, str] | None = None, artifacts: bool = False) -> list[Job]:
    """One submission with a job per mode; each mode with a report is claimed and stored."""
    new = submissions.NewSubmission(filename=f"{example}.zip", data=bundle(example), modes=list(reports),
                                    operator=operator, labels=labels or {}, submitted_by="seed",
                                    fresh=True)  # each seeded job is a run of its own, never a link
    _sub, jobs, _ = submissions.create(session, blobs, settings, new)
    session.flush()
    for job in jobs:
        report = reports[job.mode]
        if report is None:
            continue  # stays queued
        assert job_service.claim(session, job.id, "sim-worker-1@vm", job.attempts)
        session.refresh(job)
        if artifacts and job.mode == "sim":
            shutil.copytree(DATA / "artifacts", blobs.job_dir(job.id) / f"artifacts-attempt{job.attempts}")
        assert results.store(session, blobs, job, job.attempts, report)
    session.flush()
    return jobs


def seed(session: Session, blobs: BlobStore, settings: Settings) -> dict[str, Any]:
    """Operators covering every overview state; returns ids and a token secret for the tests."""
    out: dict[str, Any] = {}
    main = {"branch": "main", "author": "alice", "commit": "3ae062f"}
    feature = {"branch": "feature/tiles", "author": "bob", "commit": "5ebc8a2"}
    sim = sim_report("scale_add")
    # THE FLAG, with history: three SIM runs and two NPU runs.
    for i in range(2):
        submit_and_store(session, blobs, settings, "scale_add", {"sim": sim, "npu": npu_report(sim, diff=3e-4 / (i + 1))},
                         labels=main)
    out["flag_jobs"] = submit_and_store(session, blobs, settings, "scale_add", {"sim": sim}, labels=main, artifacts=True)
    # Graph evidence only: SIM garbage, graph verify ok, no NPU yet.
    submit_and_store(session, blobs, settings, "scale_add", {"sim": sim_report("scale_add", "relu_like")},
                     operator="relu_like", labels=feature)
    # Real defects.
    out["structural_jobs"] = submit_and_store(session, blobs, settings, "missing_vec_tiles",
                                              {"sim": sim_report("missing_vec_tiles")}, labels=feature)
    submit_and_store(session, blobs, settings, "wrong_maths", {"sim": sim_report("wrong_maths")}, labels=main)
    out["fake_jobs"] = submit_and_store(session, blobs, settings, "golden_fallback",
                                        {"sim": sim_report("golden_fallback")}, labels=main)
    long_sim = sim_report("scale_add", LONG_NAME)
    submit_and_store(session, blobs, settings, "scale_add", {"sim": long_sim, "npu": npu_report(long_sim, within=False)},
                     operator=LONG_NAME, labels=feature)
    # Partial NPU coverage: SIM judged both cases, an NPU only the first (the issue-11 softmax).
    partial_sim = sim_report("scale_add", "softmax_partial")
    partial_sim["cases"][1]["diagnosis"] = [NOISE_DIAGNOSIS]
    partial_npu = npu_report(partial_sim, diff=2.4e-7)
    partial_npu["cases"] = partial_npu["cases"][:1]
    partial_npu["cases"][0]["timing"] = {"warmup": 3, **summarize([41e-6, 42e-6, 40e-6, 44e-6, 43e-6])}
    out["partial_jobs"] = submit_and_store(session, blobs, settings, "scale_add",
                                           {"sim": partial_sim, "npu": partial_npu}, operator="softmax_partial",
                                           labels=main)
    # An NPU job while no NPU worker has ever reported: it waits as awaiting_npu.
    out["npu_waiting_jobs"] = submit_and_store(session, blobs, settings, "scale_add", {"npu": None},
                                               operator="npu_waiting_op")
    # A job still waiting in the queue.
    out["queued_jobs"] = submit_and_store(session, blobs, settings, "scale_add", {"sim": None}, operator="queued_op")
    workers.heartbeat(session, "sim-worker-1@vm", "vm", ["sim"],
                      {"modes": ["sim"], "devices": [], "graph_verify": "ready",
                       "versions": {"pypto": "0.2.0", "torch": "2.13.0+cpu", "python": "3.11.7", "cann": None}},
                      None, 9)
    _token, out["token"] = tokens.create(session, "alice", ["read", "submit"])
    _token, out["read_token"] = tokens.create(session, "reader", ["read"])
    return out


def seed_many_cases(session: Session, blobs: BlobStore, settings: Settings, name: str = "many_cases_op",
                    cases: int = 14, runs: int = 3) -> list[Job]:
    """An operator with more cases than the per-case charts draw: NPU runs only (so its verdict is a
    plain pass), each case with its own diff, growing run by run."""
    jobs: list[Job] = []
    proto = sim_report("scale_add", name)["cases"][0]
    for r in range(runs):
        sim = sim_report("scale_add", name)
        sim["cases"] = [dict(copy.deepcopy(proto), case=f"{name}_case_{i:02d}") for i in range(cases)]
        npu = npu_report(sim)
        for i, case in enumerate(npu["cases"]):
            case["metrics"]["max_abs_diff"] = 10 ** (-6 + (i % 5) * 0.5) * (r + 1)
        jobs += submit_and_store(session, blobs, settings, "scale_add", {"npu": npu}, operator=name)
    return jobs
