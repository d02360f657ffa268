"""The one path by which results come back: validate, store, update the latest state.

Idempotent per job and attempt: a duplicate or late delivery (acks_late redelivery, a retried
HTTP call, a worker that lost the job to a re-queue) changes nothing.
"""
from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError

from sqlalchemy import delete, select, text
from sqlalchemy.orm import Session

from runtime import report as runtime_report
from runtime import verdicts, vocabulary
from runtime.judge.reruns import GRAPH_MEMORY_RULE  # graph verify stopped at the job's memory limit
from runtime.report import SCHEMA_VERSION
from server.blobs import BlobStore
from server.errors import InvalidInput
from server.models import CaseResult, CaseState, Job, Operator, Submission
from server.models.base import utcnow
from server.models.job import CANCELLED, ERROR, FAILED, RUNNING, SUCCEEDED, TIMEOUT
from server.services import combined, coverage, history_spans, provenance, queries, suite_runs
from server.services.jobs import finish


def validate_report(report: Any) -> dict[str, Any]:
    """The posted report, parsed with the runtime's own report classes (runtime/report.py, the one
    contract); its normalized JSON form. InvalidInput (422) names the first field that breaks it."""
    if not isinstance(report, dict):
        raise InvalidInput("report must be a JSON object")
    if report.get("schema_version") != SCHEMA_VERSION:
        raise InvalidInput(f"report schema_version must be {SCHEMA_VERSION}, got {report.get('schema_version')!r}")
    try:
        parsed = runtime_report.from_dict(report)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        raise InvalidInput(f"report{where}: {first['msg']}") from None
    return dataclasses.asdict(parsed)


def store(session: Session, blobs: BlobStore, job: Job, attempt: int, report: dict[str, Any] | None,
          error: str | None = None, cancelled: bool = False, timed_out: bool = False) -> bool:
    """Store a job's outcome; False when it was a duplicate or stale delivery (nothing changed)."""
    if job.status != RUNNING or job.attempts != attempt:
        return False
    sub = session.get(Submission, job.submission_id)
    if report is not None:
        report = validate_report(report)
        path = blobs.job_dir(job.id) / f"report-attempt{attempt}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report))
        job.report_path = str(path.relative_to(blobs.root))
        job.env_fingerprint = report.get("environment") or {}
        session.execute(delete(CaseResult).where(CaseResult.job_id == job.id))
        rows = [_row(job, attempt, sub, case) for case in report["cases"]]
        provenance.stamp_worker_rows(job, report, rows)
        session.add_all(rows)
        session.flush()
        job.summary = _summary(rows)
        job.case_count = len(rows)
        _update_latest(session, job, rows)
        history_spans.record(session, [job])
    if cancelled:
        finish(job, CANCELLED, error)
    elif timed_out:
        finish(job, TIMEOUT, error or "the job ran past its time limit")
    elif error is not None:
        finish(job, ERROR, error)
    else:
        ok = report is not None and report["cases"] and all(
            verdicts.acceptable(c["verdict"], job.mode) for c in report["cases"])
        finish(job, SUCCEEDED if ok else FAILED)
    suite_runs.job_stored(session, job, sub)
    return True


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _row(job: Job, attempt: int, sub: Submission | None, case: dict[str, Any]) -> CaseResult:
    return CaseResult(**case_values(job, attempt, sub, case))


def case_values(job: Job, attempt: int, sub: Submission | None, case: dict[str, Any]) -> dict[str, Any]:
    """The one mapping from a runtime case to a stored row's columns (uploads insert these in bulk)."""
    m = case.get("metrics") or {}
    cost = case.get("cost_model") or {}
    graph = case.get("graph_verify") or {}
    error = case.get("error") or {}
    return dict(
        job_id=job.id, operator_id=job.operator_id, operator=str(case["operator"])[:200],
        case=str(case["case"])[:200], mode=job.mode, attempt=attempt, verdict=case["verdict"],
        structural=case["structural"], stage=str(case.get("stage", ""))[:32], precision=case["precision"],
        output_written=case.get("output_written"), kernel_launches=int(case.get("kernel_launches") or 0),
        max_abs_diff=_num(m.get("max_abs_diff")), max_rel_diff=_num(m.get("max_rel_diff")),
        mismatch_ratio=_num(m.get("mismatch_ratio")), nan_count=m.get("nan_count"), inf_count=m.get("inf_count"),
        output_abs_max=_num(m.get("output_abs_max")), golden_abs_max=_num(m.get("golden_abs_max")),
        rtol=_num(m.get("rtol")), atol=_num(m.get("atol")), shape_match=m.get("shape_match"),
        dtype_match=m.get("dtype_match"), aicore_time_us=_num(cost.get("aicore_time_us")),
        utilization=_num(cost.get("utilization")), total_cycles=cost.get("total_cycles"),
        aic_tasks=cost.get("aic_tasks"), aiv_tasks=cost.get("aiv_tasks"), graph_status=graph.get("status"),
        graph_max_abs_diff=_num((graph.get("metrics") or {}).get("max_abs_diff")),
        duration_s=float(case.get("duration_s") or 0.0), error_type=(error.get("type") or None),
        error_message=(error.get("message") or None),
        diagnosis_rules=" ".join(d.get("rule", "") for d in case.get("diagnosis") or [])[:500],
        branch=sub.branch if sub else None, commit=sub.commit if sub else None,
        author=sub.author if sub else None, report=case,
    )


def _summary(rows: list[CaseResult]) -> dict[str, Any]:
    """Verdict and outcome counts, and the job's outcome in the one vocabulary (runtime.vocabulary: as its
    exit code)."""
    counts: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
        kind = vocabulary.outcome(row.verdict, row.mode, row.stage) or ""
        outcomes[kind] = outcomes.get(kind, 0) + 1
    kind = vocabulary.cases_outcome(rows, rows[0].mode) if rows else None
    return {"verdicts": counts, "cases": len(rows), "outcome": kind, "outcomes": outcomes}


def _update_latest(session: Session, job: Job, rows: list[CaseResult]) -> None:
    """Point each case's state at these results and recompute the verdict across modes."""
    for row in rows:
        state = session.get(CaseState, (job.operator_id, row.case))
        if state is None:
            state = CaseState(operator_id=job.operator_id, case=row.case, combined_verdict="awaiting_npu")
            session.add(state)
        if job.mode == "sim":
            state.sim_result_id = row.id
        else:
            state.npu_result_id = row.id
        sim = session.get(CaseResult, state.sim_result_id) if state.sim_result_id else None
        npu = session.get(CaseResult, state.npu_result_id) if state.npu_result_id else None
        memory = bool(sim and ((sim.report or {}).get("graph_verify") or {}).get("rule") == GRAPH_MEMORY_RULE)
        state.combined_verdict, reason = combined.combine(sim.verdict if sim else None, npu.verdict if npu else None,
                                                          memory, sim.stage if sim else "", npu.stage if npu else "")
        state.reason = reason[:300]
        state.updated_at = utcnow()
    session.flush()
    refresh_operator(session, job.operator_id)


def refresh_operator(session: Session, operator_id: int) -> None:
    """Rewrite the operator's overview row from its cases' latest state."""
    operator = session.get(Operator, operator_id)
    if operator is None:
        return
    # Plain rows of the columns needed, not ORM objects with their reports: for an upload of
    # 10,000 cases, loading entities dominated the time (bench/ingest.py).
    states = session.execute(select(CaseState.sim_result_id, CaseState.npu_result_id, CaseState.combined_verdict)
                             .where(CaseState.operator_id == operator_id)).all()
    results = queries.state_results(session, states, CaseResult.id, CaseResult.job_id, CaseResult.verdict,
                                    CaseResult.max_abs_diff, CaseResult.graph_status, CaseResult.graph_max_abs_diff,
                                    CaseResult.atol, CaseResult.aicore_time_us, CaseResult.case,
                                    CaseResult.kernel_launches, CaseResult.nan_count, CaseResult.output_written,
                                    CaseResult.source, CaseResult.stage)
    sims = [results[s.sim_result_id] for s in states if s.sim_result_id in results]
    npus = [results[s.npu_result_id] for s in states if s.npu_result_id in results]
    counts: dict[str, int] = {}
    for s in states:
        counts[s.combined_verdict] = counts.get(s.combined_verdict, 0) + 1
    operator.combined_verdict = combined.worst([s.combined_verdict for s in states])
    operator.outcome = vocabulary.worst(combined.outcome(results.get(s.sim_result_id or 0),
                                                         results.get(s.npu_result_id or 0)) for s in states)
    operator.case_count = len(states)
    operator.verdict_counts = counts
    operator.sim_verdict = _worst_mode_verdict([r.verdict for r in sims])
    operator.npu_verdict = _worst_mode_verdict([r.verdict for r in npus])
    operator.sim_max_abs_diff = _max([r.max_abs_diff for r in sims])
    graph = [r.graph_status for r in sims if r.graph_status]
    operator.graph_status = ("fail" if "fail" in graph else "error" if "error" in graph else
                             "pass" if "pass" in graph else (graph[0] if graph else None))
    operator.graph_max_abs_diff = _max([r.graph_max_abs_diff for r in sims])
    operator.npu_max_abs_diff = _max([r.max_abs_diff for r in npus])
    operator.npu_tolerance = _max([r.atol for r in npus])
    operator.aicore_time_us = _max([r.aicore_time_us for r in sims])
    operator.latest_sim_job_id = max((r.job_id for r in sims), default=None)
    operator.latest_npu_job_id = max((r.job_id for r in npus), default=None)
    ran = [r for r in sims if coverage.kernel_ran(r)]
    operator.sim_cases = len(ran)
    operator.graph_cases = sum(1 for r in ran if r.graph_status in coverage.GRAPH_JUDGED)
    operator.npu_cases = len(npus)
    operator.sim_nan_count = sum(r.nan_count or 0 for r in sims)
    operator.sim_unwritten = bool(sims) and all(r.output_written is False for r in sims)
    operator.uploaded_cases = sum(1 for r in [*sims, *npus] if r.source == provenance.UPLOAD)
    latest = session.scalar(select(Submission).where(Submission.operator == operator.name)
                            .order_by(Submission.id.desc()).limit(1))
    operator.labels = dict(latest.labels) if latest else {}
    operator.updated_at = utcnow()


# refresh_operator's case counts for every operator at once, in SQL (both dialects): for a database
# whose operators predate them (migration 0012) and for bench/seed.py's bulk rows.
_SIM = ("FROM case_states s JOIN case_results r ON r.id = s.sim_result_id WHERE s.operator_id = operators.id")
_RAN = f"{_SIM} AND r.kernel_launches > 0 AND r.\"case\" != '{coverage.RUN_WHOLE_CASE}'"
_GRAPH_JUDGED = ", ".join(f"'{s}'" for s in coverage.GRAPH_JUDGED)
CASE_COUNTS_SQL = (
    f"UPDATE operators SET sim_cases = (SELECT count(*) {_RAN}), "
    f"graph_cases = (SELECT count(*) {_RAN} AND r.graph_status IN ({_GRAPH_JUDGED})), "
    "npu_cases = (SELECT count(*) FROM case_states s JOIN case_results r ON r.id = s.npu_result_id "
    "WHERE s.operator_id = operators.id), "
    f"sim_nan_count = (SELECT coalesce(sum(r.nan_count), 0) {_SIM}), "
    f"sim_unwritten = (SELECT count(*) > 0 AND count(*) = count(CASE WHEN r.output_written = false THEN 1 END) {_SIM})")


def refresh_outcomes(conn: Any) -> None:
    """Every operator's outcome from its cases' latest results, on a connection (migration 0014)."""
    rows = conn.execute(text(
        "SELECT s.operator_id, r1.verdict AS sim_verdict, r1.stage AS sim_stage, r2.verdict AS npu_verdict, "
        "r2.stage AS npu_stage FROM case_states s LEFT JOIN case_results r1 ON r1.id = s.sim_result_id "
        "LEFT JOIN case_results r2 ON r2.id = s.npu_result_id")).all()
    cases: dict[int, list[str | None]] = {}
    for r in rows:
        sim = SimpleNamespace(verdict=r.sim_verdict, stage=r.sim_stage) if r.sim_verdict else None
        npu = SimpleNamespace(verdict=r.npu_verdict, stage=r.npu_stage) if r.npu_verdict else None
        cases.setdefault(r.operator_id, []).append(combined.outcome(sim, npu))
    for operator_id, outcomes in cases.items():
        conn.execute(text("UPDATE operators SET outcome = :o WHERE id = :i"),
                     {"o": vocabulary.worst(outcomes), "i": operator_id})


def recombine_not_judged(conn: Any) -> None:
    """Cases stored as structural_error for a not_run that was not the kernel's (a stage such as skipped or
    arguments), combined again with their stages, and their operators' rows rewritten (migration 0018)."""
    rows = conn.execute(text(
        "SELECT s.operator_id, s.\"case\" AS case_id, r1.verdict AS sim_verdict, r1.stage AS sim_stage, r2.verdict AS npu_verdict, "
        "r2.stage AS npu_stage FROM case_states s LEFT JOIN case_results r1 ON r1.id = s.sim_result_id "
        "LEFT JOIN case_results r2 ON r2.id = s.npu_result_id WHERE s.combined_verdict = 'structural_error'")).all()
    touched = set()
    for r in rows:
        verdict, reason = combined.combine(r.sim_verdict, r.npu_verdict, False, r.sim_stage or "", r.npu_stage or "")
        if verdict != combined.STRUCTURAL_ERROR:
            conn.execute(text("UPDATE case_states SET combined_verdict = :v, reason = :r "
                              "WHERE operator_id = :o AND \"case\" = :c"),
                         {"v": verdict, "r": reason[:300], "o": r.operator_id, "c": r.case_id})
            touched.add(r.operator_id)
    if touched:
        with Session(bind=conn) as session:
            for operator_id in sorted(touched):
                refresh_operator(session, operator_id)
            session.flush()


def refresh_case_counts(conn: Any) -> None:
    """CASE_COUNTS_SQL on a connection."""
    conn.exec_driver_sql(CASE_COUNTS_SQL)


_MODE_ORDER = ("suspect_fake_pass", "crash", "timeout", "resource_limit", "structural_error", "graph_fail",
               "precision_fail", "version_skew", "not_run", "sim_unsupported", "inconclusive", "sim_output_unwritten", "sim_garbage_graph_ok", "pass")


def _worst_mode_verdict(values: list[str]) -> str | None:
    return min(values, key=lambda v: _MODE_ORDER.index(v) if v in _MODE_ORDER else 0) if values else None


def _max(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None
