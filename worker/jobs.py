"""Jobs as plain functions: claim, fetch the bundle, run it through the runtime, report back.

No Celery here (worker.tasks is the thin adapter), so a job runs the same from a test.
A failed compile, a crash, a timeout or a precision miss is a *result* the runtime returns;
exceptions from here are our own infrastructure.
"""
from __future__ import annotations

import dataclasses
import io
import logging
import tarfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.evidence import artifacts
from runtime.errors import NO_NPU_MESSAGE, HostError, SubmissionError
from runtime.devices.host import npu_status
from runtime.report import CaseResult, Report
from runtime.fence.host_memory import default_memory_bytes, describe
from runtime.fence.scratch import JOB_PREFIX, OwnedDir
from runtime.runner import RunOptions, run_submission
from runtime.warm import WarmParentError
from worker.card_health import CardLedger
from worker.card_pool import CardPool, NoFreeCard, NoUsableCard
from worker.client import ApiClient, ApiRejected, ApiUnavailable
from worker.heartbeat import JobHeartbeat
from worker.npu_run import run_on_cards
from worker.warm import WarmHolder

log = logging.getLogger(__name__)

GIB = 2**30
# How a resource_limit verdict tells a service user to raise the limit their case hit.
WORKER_LIMIT_FLAGS = {"memory": "the server's CASE_MEMORY_GIB setting (ask its admin)",
                      "processes": "the worker's runtime default (ask its admin)",
                      "disk": "the worker's runtime default (ask its admin)",
                      "files": "the worker's runtime default (ask its admin)"}
MAX_TRACEBACK_CHARS = 4000
# Outcomes of run_job.
SKIPPED = "skipped"  # not claimable: another delivery has it, or it was cancelled or re-queued
STORED = "stored"  # the server stored our result
IGNORED = "ignored"  # the server had moved on (a stale attempt): our result changed nothing
LOST = "lost"  # the API stayed unreachable after the claim; the server's stale sweep re-queues the job


@dataclass
class WorkerContext:
    """What a job needs from the worker process it runs in."""
    api: ApiClient
    name: str
    cache_dir: Path | None
    heartbeat_s: float
    cards: CardPool | None = None  # NPU workers: one job per card (worker/card_pool.py)
    ledger: CardLedger | None = None  # and each card's health (worker/card_health.py)
    graph_verify: bool = True
    parallel: int = 1  # cases of one job at once
    job_nice: int = 0  # its cases' CPU niceness (WorkerSettings.job_nice)
    warm_parents: dict[str, WarmHolder] = field(default_factory=dict)
    hide_paths: list[Path] = field(default_factory=list)  # the service's data, out of every job's sight

    def warm(self, mode: str) -> WarmHolder:
        """The process's warm parent for a mode (an NPU parent keeps CANN's environment, a SIM one drops it)."""
        if mode not in self.warm_parents:
            self.warm_parents[mode] = WarmHolder(mode)
        return self.warm_parents[mode]

    def close(self) -> None:
        for holder in self.warm_parents.values():
            holder.close()
        self.api.close()


def run_job(ctx: WorkerContext, job_id: int, attempt: int,
            interrupts: tuple[type[BaseException], ...] = ()) -> str:
    """Run one job attempt end to end; returns an outcome (SKIPPED, STORED, IGNORED, LOST).

    Raises ApiUnavailable only when the claim itself failed: then nothing has started and the
    caller may retry the delivery. `interrupts` are exceptions that mean the job's time is up
    (Celery's soft time limit); the job then reports an error instead of a report.
    """
    job = ctx.api.claim(job_id, ctx.name, attempt)
    if job is None:
        log.info("job.not_claimable job_id=%s attempt=%s", job_id, attempt)
        return SKIPPED
    log.info("job.claimed job_id=%s attempt=%s mode=%s worker=%s", job_id, attempt, job["mode"], ctx.name)
    ctx.warm(job["mode"]).clear_cancel()
    # Owned (locked) by this process: if it is killed mid-job, the next worker removes it (runtime/fence/scratch.py).
    with OwnedDir(f"{JOB_PREFIX}{job_id}-") as tmp, \
            JobHeartbeat(ctx.api, job_id, attempt, ctx.heartbeat_s,
                         on_cancel=ctx.warm(job["mode"]).cancel_running) as beat:
        Path(tmp).chmod(0o755)  # the sandboxed job uid must traverse into its job dirs
        try:
            result = _execute(ctx, job, Path(tmp), beat, interrupts)
        except (ApiUnavailable, ApiRejected) as exc:
            log.error("job.lost job_id=%s attempt=%s error=%s", job_id, attempt, exc)
            return LOST
        try:
            stored = ctx.api.result(job_id, attempt, **result)
        except (ApiUnavailable, ApiRejected) as exc:
            log.error("job.result_lost job_id=%s attempt=%s error=%s", job_id, attempt, exc)
            return LOST
    log.info("job.finished job_id=%s attempt=%s stored=%s error=%s", job_id, attempt, stored,
             bool(result.get("error")))
    return STORED if stored else IGNORED


def _memory(gib: Any) -> dict[str, Any]:
    """The server's CASE_MEMORY_GIB, or when it is unset a share of this host's memory (stated in the report)."""
    if gib is None:
        return {"memory_bytes": default_memory_bytes(), "memory_from": describe()}
    return {"memory_bytes": int(float(gib) * GIB), "memory_from": "the server's CASE_MEMORY_GIB"}


def _execute(ctx: WorkerContext, job: dict[str, Any], tmp: Path, beat: JobHeartbeat,
             interrupts: tuple[type[BaseException], ...]) -> dict[str, Any]:
    """The result fields to post: a report (and artifacts), or an error."""
    bundle = ctx.api.bundle(job["id"])
    path = tmp / "bundle" / _safe_name(bundle.filename)
    path.parent.mkdir()
    path.write_bytes(bundle.data)
    options = RunOptions(
        mode=job["mode"], cases=list(job["submission"].get("case_filter") or []),
        timeout_s=float(job["case_timeout_s"]), **_memory(job.get("case_memory_gib")),
        work_dir=tmp / "work", cache_dir=ctx.cache_dir, graph_verify=ctx.graph_verify,
        parallel=ctx.parallel, limit_flags=WORKER_LIMIT_FLAGS, hide_paths=list(ctx.hide_paths),
        nice=ctx.job_nice,
    )

    def on_case(case: CaseResult, done: int, total: int) -> bool:
        return beat.progress({"done": done, "total": total, "case": case.case, "verdict": case.verdict})

    try:
        report = _run(ctx, path, options, on_case, job["id"])
    except (SubmissionError, HostError, NoUsableCard, NoFreeCard) as exc:
        return {"error": str(exc)}
    except interrupts:
        ctx.warm(job["mode"]).reset()  # interrupted mid-request: its answer would confuse the next job
        return {"error": f"the job ran past its time limit of {job['timeout_s']:.0f} s and was stopped",
                "timed_out": True}
    except Exception as exc:  # noqa: BLE001 - reported as the job's error, not retried with the same bug
        log.exception("job.internal_error job_id=%s", job["id"])
        ctx.warm(job["mode"]).reset()
        summary = traceback.format_exception_only(type(exc), exc)[-1].strip()
        # Ours, not the kernel's (infrastructure): the traceback goes with it, its last lines.
        return {"error": f"internal worker error: {summary}\n{traceback.format_exc()[-MAX_TRACEBACK_CHARS:]}"}
    return {"report": report.to_dict(), "cancelled": report.cancelled,
            "artifacts": pack_artifacts(report, tmp / "artifacts")}


def _run(ctx: WorkerContext, path: Path, options: RunOptions, on_case: Any, job_id: int) -> Report:
    """Run through the process's warm parent; an NPU job on one of the worker's cards."""
    if options.mode != "npu":
        return _run_once(ctx, path, options, on_case)
    # The runtime's own check, made before an NPU warm parent (which imports torch_npu) starts.
    available, why = npu_status()
    if not available or ctx.cards is None or ctx.ledger is None:
        raise HostError(f"{NO_NPU_MESSAGE} ({why if not available else 'this worker has no NPU cards'})")

    def on_card(card: int) -> Report:
        work = (options.work_dir or path.parent) / f"card{card}"  # a retry must not reuse the job dirs
        return _run_once(ctx, path, dataclasses.replace(options, device_id=card, work_dir=work), on_case)

    return run_on_cards(ctx.cards, ctx.ledger, job_id, on_card)


def _run_once(ctx: WorkerContext, path: Path, options: RunOptions, on_case: Any) -> Report:
    """Run through the process's warm parent; if it died under us, restart it once and rerun."""
    holder = ctx.warm(options.mode)
    try:
        return run_submission(path, options, warm=holder.get(), on_case=on_case)
    except WarmParentError as exc:
        log.warning("warm.broken mode=%s error=%s; restarting it and running the job again", options.mode, exc)
        holder.reset()
        return run_submission(path, options, warm=holder.get(), on_case=on_case)


def _safe_name(filename: str) -> str:
    name = Path(filename.replace("\\", "/")).name
    return name if name and not name.startswith(".") else "bundle.zip"


def pack_artifacts(report: Report, dest: Path) -> bytes | None:
    """The report's evidence files (runtime.evidence.artifacts.collect) as a .tar.gz, or None when there are none."""
    files = artifacts.collect(report, dest)
    if not files:
        return None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel in files:
            tar.add(dest / rel, arcname=rel, recursive=False)
    return buf.getvalue()
