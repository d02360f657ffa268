"""A database with one job for every verdict and mode, for the crawl (tests/web/test_crawl.py).

On top of the main seed (tests/web/seed.py: SIM and NPU, a fake pass, defects, queued and awaiting-NPU
jobs) and the suite seed (two nightly runs with a regression, a fix, reused results and uploads), it
stores real `crosscheck run` reports of this host (tests/web/data/*.sim.json) for the verdicts the
others lack: a golden fallback whose graph verify measured nothing (the job page once crashed on it),
a tiling bug, a script whose graph verify failed with only a noise rule matched, and every remaining
verdict id planted on a real report. On top of the suite seed's regression and performance regression,
the bisect's culprits for both (named as `crosscheck ci run --bisect` posts them), and a second suite,
"precision", whose five runs make one case's error creep up within tolerance: precision drift on that
run's page and, with its trend against the tolerance line, on the operator's page. And real-operator-shaped
results (tests/web/realops_seed.py): the gym's long paths, a fixture that cannot be supplied, an NPU-only
golden, a degenerate compare, the four outcomes.
"""
from __future__ import annotations

import copy
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from runtime import verdicts, vocabulary
from server.blobs import BlobStore
from server.config import Settings
from server.models import CaseResult, SuiteRunResult
from server.schemas.suite import CulpritIn
from server.services import culprits, submissions, suite_runs, suite_submit, workers
from tests.server.suites import scale_add, versions, zip_files
from tests.web import seed as main_seed
from tests.web import realops_seed, suite_seed

# Real reports from this host (scrubbed of its data dir), named for what they show.
REAL = {"golden_fallback_unwritten": "golden_fallback", "tiling_bug": "tiling_bug",
        "scale_shift_broken": "scale_add", "tile_sigmoid": "sigmoid"}

# creep's first case's graph verify max |diff| in the five "precision" runs: each step under 10x the run
# before (no regression), the last 11x the median of the four before it, far inside its tolerance (8.7e-3).
CREEP = (1e-6, 2e-6, 1e-6, 4e-6, 1.6e-5)
CULPRITS = (CulpritIn(operator="alpha", commit="3f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e", metric="verdict",
                      subject="alpha: fold the scale into the vector load and drop the temporary tile buffer"),
            CulpritIn(operator="beta", commit="0123456789abcdef0123456789abcdef01234567", metric="aicore_us",
                      subject="beta: split the 64x256 tile in two for the double-buffered pipeline"))


def _planted(verdict: str, mode: str) -> dict[str, Any]:
    """A real report with its cases' verdict replaced (the verdicts no example produces on this host)."""
    report = main_seed.sim_report("scale_add", f"planted_{verdict}_{mode}")
    if mode == "npu":
        report = main_seed.npu_report(report)
    for case in report["cases"]:
        case["verdict"] = verdict
        case["stage"] = "golden" if verdict == verdicts.NOT_RUN else case.get("stage", "")
        case["verdict_reason"] = f"planted for the crawl: {vocabulary.label(verdict)}"
    return report


def _reusing_run(session: Session, blobs: BlobStore, settings: Settings) -> int:
    """A third nightly run that allows reuse: beta's kernel is unchanged, so its results are linked. Reuse
    needs every online SIM worker on the same versions: the main seed's worker reports them too."""
    workers.heartbeat(session, "sim-worker-1@vm", "vm", ["sim"], {"modes": ["sim"], "graph_verify": "ready",
                                                                 "versions": versions()}, None, 9)
    run, _ = suite_runs.open_run(session, "nightly", "pipe-ccc3333", {"branch": "main", "commit": "ccc3333"},
                                 ["sim"], True, "ci-bot", False)
    suite_submit.submit_operator(session, blobs, settings, run, submissions.NewSubmission(
        filename="beta.zip", data=zip_files(scale_add()), operator="beta", submitted_by="ci-bot"))
    suite_runs.close(session, run)
    return run.id


def _drifting_run(session: Session, blobs: BlobStore, settings: Settings) -> int:
    """The "precision" suite's five runs (tests/server/test_drift.py's history); the last one's drift."""
    for i, diff in enumerate(CREEP):
        run_id = suite_seed._run(session, blobs, settings, f"d{i}d{i}d{i}d", {"creep": {}}, suite="precision",
                                 diffs={"creep": {suite_seed.C1: diff, suite_seed.C2: 1e-6}})
    return run_id


def seed(session: Session, blobs: BlobStore, settings: Settings) -> dict[str, Any]:
    info = main_seed.seed(session, blobs, settings)
    info["suite"] = suite_seed.seed(session, blobs, settings)
    info["real_jobs"] = {}
    for data, example in REAL.items():
        report = main_seed.sim_report(data)
        info["real_jobs"][data] = main_seed.submit_and_store(session, blobs, settings, example, {"sim": report},
                                                             operator=report["cases"][0]["operator"])
    info["realops"] = realops_seed.add(session, blobs, settings)
    seen = {v for (v,) in session.execute(select(CaseResult.verdict).distinct())}
    for verdict in verdicts.VERDICTS:
        if verdict in seen:
            continue
        mode = "npu" if verdict in (verdicts.PASS, verdicts.PRECISION_FAIL) else "sim"
        main_seed.submit_and_store(session, blobs, settings, "scale_add", {mode: copy.deepcopy(_planted(verdict, mode))},
                                   operator=f"planted_{verdict}_{mode}")
    info["reuse_run"] = _reusing_run(session, blobs, settings)
    culprits.attach(session, suite_runs.get_run(session, info["suite"]["second"]), list(CULPRITS), "ci-bot")
    info["drift_run"] = _drifting_run(session, blobs, settings)
    session.flush()
    info["reused"] = session.scalar(select(SuiteRunResult.id).where(SuiteRunResult.reused_from_job_id.is_not(None)))
    return info
