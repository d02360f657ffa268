"""What the job page shows, gathered before rendering: the template only formats.

Reads the job's rows through the services, and its files (report, bundle, artifacts) through
the BlobStore; every missing or unreadable file degrades to an absent section, never an error.
"""
from __future__ import annotations

import json
import logging
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy.orm import Session

from runtime.evidence import costmodel
from runtime import vocabulary
from server.blobs import BlobStore
from server.errors import DomainError
from server.models import CaseResult, Job, Submission
from server.models.job import FINISHED
from server.services import artifacts as artifact_service
from server.services import jobs as job_service
from server.services import queries
from web import charts, evidence, mismatch_chart, source

log = logging.getLogger(__name__)
CASE_DIR = re.compile(r"(?:^|/)(\d{3})-[^/]+/")
MAX_LAUNCH_TIMELINES = 4
MAX_LANES_BYTES = 10 * 1024 * 1024


@dataclass
class CaseView:
    result: CaseResult
    index: int
    stages: list[dict[str, Any]]
    diagnoses: list[dict[str, Any]]
    artifacts: list[str]
    timelines: list[dict[str, Any]] = field(default_factory=list)
    trace: str | None = None  # merged_swimlane.json, for Perfetto
    reproduce: str = ""
    noise: int = 0  # benign pypto log lines the diagnosis hid
    deciding: dict[str, Any] | None = None  # web.evidence.deciding
    cost_warning: str = ""
    lead: dict[str, Any] | None = None  # web.evidence.lead: the deciding evidence, shown first
    maps: list[mismatch_chart.MismatchMap] = field(default_factory=list)  # where a failed compare's mismatches are

    @property
    def report(self) -> dict[str, Any]:
        return self.result.report or {}


def build(session: Session, blobs: BlobStore, job_id: int) -> dict[str, Any]:
    job = job_service.get(session, job_id)
    sub = session.get(Submission, job.submission_id)
    results = queries.job_cases(session, job.id)
    report = _read_json(blobs, job.report_path) if job.report_path else None
    lint = list((report or {}).get("lint") or [])
    needs_source = lint or any(d.get("line") for r in results for d in (r.report or {}).get("diagnosis") or [])
    sources = _sources(blobs, sub) if needs_source and sub else {}
    artifacts = _by_case(_attempt_files(blobs, job))
    shown: set[tuple[str, int]] = set()  # each source line is excerpted once per page, where it first appears
    for finding in lint:
        finding["excerpt"] = _once(shown, source.excerpt(sources, finding.get("file", ""), int(finding.get("line") or 0)))
    cases = [_case(blobs, job, sub, i, r, sources, artifacts.get(i, []), shown) for i, r in enumerate(results)]
    return {"job": job, "sub": sub, "cases": cases, "lint": lint,
            "environment": (report or {}).get("environment") or job.env_fingerprint or {},
            "siblings": queries.job_siblings(session, job.submission_id) if sub else [job],
            "queue_position": job_service.queue_position(session, job),
            "finished": job.status in FINISHED, "progress": job.progress or {}}


def _once(shown: set[tuple[str, int]], x: dict[str, Any] | None) -> dict[str, Any] | None:
    """The excerpt the first time its line appears; later, a pointer back to it."""
    if x is None:
        return None
    key = (x["file"], x["line"])
    if key in shown:
        return {"file": x["file"], "line": x["line"], "repeat": True}
    shown.add(key)
    return x


def _case(blobs: BlobStore, job: Job, sub: Submission | None, index: int, r: CaseResult,
          sources: dict[str, str], files: list[str], shown: set[tuple[str, int]]) -> CaseView:
    rep = r.report or {}
    diagnoses, noise = [], 0
    for d in rep.get("diagnosis") or []:
        if vocabulary.is_noise(str(d.get("rule", ""))):
            noise += 1  # a known-benign log line: a footnote, never a card
            continue
        excerpt = source.excerpt(sources, d.get("file", ""), int(d.get("line") or 0))
        diagnoses.append({**d, "excerpt": _once(shown, excerpt)})
    view = CaseView(r, index, evidence.stages(rep, r.verdict), diagnoses, files)
    view.noise = noise
    view.deciding = evidence.deciding(rep, job.mode)
    view.lead = evidence.lead(view.deciding, r.verdict, job.mode, rep.get("output_written"))
    view.maps = mismatch_chart.build(rep, job.mode)
    view.cost_warning = evidence.cost_warning(rep.get("cost_model"))
    target = PurePosixPath(sub.filename).name if sub else r.operator
    view.reproduce = " ".join(["crosscheck", "run", shlex.quote(target), "--mode", job.mode, "--case",
                               shlex.quote(r.case)])
    launches = sorted({m.group(1) for f in files if (m := re.search(r"(launch\d+)/", f))},
                      key=lambda s: int(s[6:]))
    for launch in launches[:MAX_LAUNCH_TIMELINES]:
        lanes = _lanes(blobs, job.id, files, launch)
        timeline = charts.lanes_timeline(lanes) if lanes else None
        if timeline:
            view.timelines.append({"launch": launch, "timeline": timeline})
    view.trace = next((f for f in files if f.endswith("/" + costmodel.TRACE_FILE)), None)
    return view


def _lanes(blobs: BlobStore, job_id: int, files: list[str], launch: str) -> list[dict[str, Any]]:
    """lanes.json of a launch, or the same computed from its _simulate.swim.json."""
    for name in ("lanes.json", costmodel.SWIM_FILE):
        rel = next((f for f in files if f.endswith(f"{launch}/{name}")), None)
        data = _read_json(blobs, f"jobs/{job_id}/{rel}", MAX_LANES_BYTES) if rel else None
        if not isinstance(data, list):
            continue
        if name == "lanes.json":
            return data
        return [{"core": f"{c['coreType']}_{c.get('blockIdx', 0)}", "type": c["coreType"],
                 "tasks": [[t["execStart"] / costmodel.CYCLES_PER_US, t["execEnd"] / costmodel.CYCLES_PER_US,
                            t.get("taskId")] for t in c["tasks"]]}
                for c in data if isinstance(c, dict) and c.get("coreType") in costmodel.AICORE_TYPES
                and c.get("tasks")]
    return []


def _attempt_files(blobs: BlobStore, job: Job) -> list[str]:
    """The published artifacts of the job's current attempt (artifacts-attempt<N>/...)."""
    files = [rel for rel, _size in artifact_service.listing(blobs, job.id)]
    return [f for f in files if f.startswith(f"artifacts-attempt{job.attempts}/")]


def _by_case(files: list[str]) -> dict[int, list[str]]:
    """Artifact paths grouped by case index (runtime.evidence.artifacts names folders NNN-<case>/)."""
    out: dict[int, list[str]] = {}
    for f in files:
        m = CASE_DIR.search(f)
        if m:
            out.setdefault(int(m.group(1)), []).append(f)
    return out


def _read_json(blobs: BlobStore, rel: str, limit: int = 50 * 1024 * 1024) -> Any:
    path = blobs.path(rel)
    try:
        if path.stat().st_size > limit:
            return None
        return json.loads(path.read_text())
    except (OSError, ValueError):
        log.info("web.unreadable_file path=%s", rel)
        return None


def _sources(blobs: BlobStore, sub: Submission) -> dict[str, str]:
    try:
        return source.bundle_sources(blobs.read(sub.blob_path), sub.filename)
    except DomainError:
        return {}
