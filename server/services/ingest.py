"""Store results produced outside the queue (an NPU lab's pipeline), all or nothing, with provenance.

An upload names a suite, a run key and an attempt; it is idempotent by (suite, run key, attempt,
operator, case, mode): sending it again stores nothing new, sending a different verdict for a
stored key is a conflict. Each operator's cases become a finished job in the `upload` queue (it is
never run), so the job, operator and case pages show them like any other result, marked with the
token that uploaded them. Unverified NPU results (no pypto, CANN or device in the fingerprint)
are stored and shown, but never become a case's latest result.

Uploads are claims nobody here checked, so they are held to their owner (docs/SECURITY.md, "Results
belong to their owners"): never a SIM `pass` (SIM never measures precision), only into suite runs
and operators the token owns (or any, for an admin), and every stored upload is in the audit log.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from runtime.modes import MODES
from runtime import verdicts
from server.blobs import BlobStore
from server.errors import Conflict, InvalidInput
from server.models import (
    CaseResult,
    CaseState,
    Job,
    Operator,
    Submission,
    SuiteRun,
    SuiteRunResult,
)
from server.models.base import utcnow
from server.models.job import FAILED, SUCCEEDED
from server.models.suite_run import DONE, OPEN, UPLOADED
from server.services import (
    audit,
    combined,
    history_spans,
    names,
    ownership,
    provenance,
    results,
    suite_finish,
    suite_runs,
)
from server.services.jobs import UPLOAD_QUEUE


@dataclass
class Upload:
    suite: str
    run_key: str
    attempt: int
    labels: dict[str, str]
    mode: str
    environment: dict[str, Any]
    cases: list[dict[str, Any]]  # runtime-shaped case dicts, each with its operator
    kind: str  # report | junit
    filename: str
    raw: bytes
    content_sha256: dict[str, str] = field(default_factory=dict)  # operator -> the runtime's digest


@dataclass
class Stored:
    run: SuiteRun
    stored: int
    duplicates: int
    unverified: int
    missing: list[str]
    operators: list[str]
    jobs: list[int]


def _key(case: dict[str, Any], mode: str) -> tuple[str, str, str]:
    return (str(case["operator"])[:200], str(case["case"])[:200], mode)


def store(session: Session, blobs: BlobStore, up: Upload, uploaded_by: str, admin: bool,
          token_id: int | None = None) -> Stored:
    """Store the upload as token `uploaded_by` (an admin's when `admin`): all or nothing."""
    if up.mode not in MODES:
        raise InvalidInput(f"unknown mode {up.mode!r}; use sim or npu")
    if up.attempt < 1:
        raise InvalidInput("attempt must be 1 or more")
    for i, case in enumerate(up.cases):
        if case.get("verdict") not in verdicts.VERDICTS:
            raise InvalidInput(f"case #{i + 1}: {case.get('verdict')!r} is not a known verdict")
        if up.mode == "sim" and case["verdict"] == verdicts.PASS:
            raise InvalidInput(f"case #{i + 1} ({case.get('case')!r}) claims a SIM pass: SIM never measures "
                               "precision, so no SIM result is ever `pass` (docs/SECURITY.md)")
        if not str(case.get("operator") or "").strip() or not str(case.get("case") or "").strip():
            raise InvalidInput(f"case #{i + 1} has no operator or case id")
        names.check(f"case #{i + 1}: operator", str(case["operator"]))
        names.check(f"case #{i + 1}: case id", str(case["case"]))
    keys = [_key(c, up.mode) for c in up.cases]
    seen: set[tuple[str, str, str]] = set()
    for key in keys:
        if key in seen:
            raise InvalidInput(f"the upload holds {key[0]} / {key[1]} twice")
        seen.add(key)
    run, created = suite_runs.open_run(session, up.suite, up.run_key, up.labels, [up.mode], False, uploaded_by, admin)
    ownership.check_run(run, uploaded_by, admin)
    for operator in session.scalars(select(Operator).where(Operator.name.in_(sorted({k[0] for k in keys})))):
        ownership.check_operator(operator, uploaded_by, admin)
    if created:
        run.closed_at = utcnow()  # nobody else will close a run an upload opened
    existing = {(r.operator, r.case, r.mode): r for r in session.scalars(select(SuiteRunResult).where(
        SuiteRunResult.suite_run_id == run.id, SuiteRunResult.attempt == up.attempt))}
    fresh, duplicates = [], 0
    for case, key in zip(up.cases, keys, strict=True):
        old = existing.get(key)
        if old is None:
            fresh.append(case)
        elif old.verdict == case["verdict"]:
            duplicates += 1
        else:
            raise Conflict(f"{key[0]} / {key[1]} ({key[2]}) attempt {up.attempt} is already stored in suite run "
                           f"{run.id} as {old.verdict}; send the new result as attempt {up.attempt + 1}")
    missing = provenance.missing_fingerprint(up.environment, up.mode)
    jobs = _store_fresh(session, blobs, up, run, fresh, uploaded_by) if fresh else []
    if fresh:
        audit.record(session, uploaded_by, audit.UPLOAD, f"suite run {run.id}", token_id, kind=up.kind,
                     mode=up.mode, cases=len(fresh), operators=sorted({k[0] for k in keys}), attempt=up.attempt,
                     jobs=[j.id for j in jobs])
    if fresh and run.status == OPEN:
        suite_runs.settle(session, run)
    elif fresh:
        suite_finish.refinish(session, run)
    return Stored(run=run, stored=len(fresh), duplicates=duplicates, unverified=len(fresh) if missing else 0,
                  missing=missing, operators=sorted({k[0] for k in keys}), jobs=[j.id for j in jobs])


def _store_fresh(session: Session, blobs: BlobStore, up: Upload, run: SuiteRun, cases: list[dict[str, Any]],
                 uploaded_by: str) -> list[Job]:
    digest, rel = blobs.put_bundle(up.raw, ".json" if up.kind == "report" else ".xml")
    by_operator: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        by_operator.setdefault(str(case["operator"])[:200], []).append(case)
    operators = _operators(session, list(by_operator), uploaded_by)
    now = utcnow()
    subs, jobs = {}, {}
    for name, op_cases in by_operator.items():
        subs[name] = Submission(operator=name, kind=up.kind, filename=up.filename[:300], bundle_sha256=digest,
                                blob_path=rel, modes=[up.mode], case_filter=[], labels=dict(run.labels),
                                branch=run.branch, commit=run.commit, author=run.labels.get("author"),
                                suite_run_id=run.id, created_by=uploaded_by, created_at=now)
    session.add_all(subs.values())
    session.flush()
    for name, op_cases in by_operator.items():
        ok = all(verdicts.acceptable(c["verdict"], up.mode) for c in op_cases)
        counts: dict[str, int] = {}
        for c in op_cases:
            counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
        jobs[name] = Job(submission_id=subs[name].id, operator_id=operators[name].id, mode=up.mode,
                         queue=UPLOAD_QUEUE, status=SUCCEEDED if ok else FAILED, attempts=up.attempt,
                         env_fingerprint=dict(up.environment), summary={"verdicts": counts, "cases": len(op_cases)},
                         timeout_s=0.0, submitted_by=uploaded_by, case_count=len(op_cases), created_at=now,
                         queued_at=now, started_at=now, finished_at=now,
                         duration_s=round(sum(float(c.get("duration_s") or 0) for c in op_cases), 3))
    session.add_all(jobs.values())
    session.flush()
    # Core bulk inserts: ORM objects cost ~0.5 ms each, which alone broke the 10,000-case target.
    now_values = {"created_at": now}
    values = []
    for name, op_cases in by_operator.items():
        job, sub = jobs[name], subs[name]
        for c in op_cases:
            row = results.case_values(job, up.attempt, sub, c)
            row.update(now_values, **provenance.values(
                source=provenance.UPLOAD, source_name=uploaded_by, env=up.environment, mode=up.mode,
                content_sha256=up.content_sha256.get(name), case=row["case"], verdict=row["verdict"]))
            values.append(row)
        if up.kind == "report":
            job.report_path = rel  # the report exactly as sent, stored once
    conn = session.connection()  # Core, not the ORM's bulk path: no per-row bookkeeping
    conn.execute(insert(CaseResult.__table__), values)
    stored = session.execute(select(CaseResult.id, CaseResult.job_id, CaseResult.operator_id, CaseResult.operator,
                                    CaseResult.case, CaseResult.verdict, CaseResult.max_abs_diff,
                                    CaseResult.graph_max_abs_diff, CaseResult.diagnosis_rules, CaseResult.verified,
                                    CaseResult.content_sha256, CaseResult.stage)
                             .where(CaseResult.job_id.in_([j.id for j in jobs.values()]))).all()
    missing = ", ".join(provenance.missing_fingerprint(up.environment, up.mode))
    conn.execute(insert(SuiteRunResult.__table__), [{
        "suite_run_id": run.id, "operator": r.operator, "case": r.case, "mode": up.mode, "attempt": up.attempt,
        "status": DONE, "verdict": r.verdict, "source": UPLOADED, "case_result_id": r.id, "job_id": r.job_id,
        "reused_from_job_id": None, "content_sha256": r.content_sha256, "max_abs_diff": r.max_abs_diff,
        "graph_max_abs_diff": r.graph_max_abs_diff, "diagnosis_rules": r.diagnosis_rules or "",
        "verified": r.verified, "flips": 0, "note": "" if r.verified else f"unverified: {missing} missing",
        "created_at": now} for r in stored])
    _update_latest(session, up.mode, [r for r in stored if r.verified])
    history_spans.record(session, jobs.values())
    return list(jobs.values())


def _operators(session: Session, names: list[str], owner: str) -> dict[str, Operator]:
    found = {o.name: o for o in session.scalars(select(Operator).where(Operator.name.in_(names)))}
    for name in names:
        if name not in found:
            found[name] = Operator(name=name, owner=owner)
            session.add(found[name])
    session.flush()
    return found


def _update_latest(session: Session, mode: str, rows: list[Any]) -> None:
    """Point each case's latest `mode` result at these rows (id, operator_id, case, verdict, stage), in bulk."""
    if not rows:
        return
    op_ids = sorted({r.operator_id for r in rows})
    states = {(s.operator_id, s.case): s for s in session.execute(
        select(CaseState.operator_id, CaseState.case, CaseState.sim_result_id, CaseState.npu_result_id)
        .where(CaseState.operator_id.in_(op_ids)))}
    other_ids = [s.sim_result_id if mode == "npu" else s.npu_result_id for s in states.values()]
    wanted = [i for i in other_ids if i]
    other = {i: (v, st) for i, v, st in session.execute(select(CaseResult.id, CaseResult.verdict, CaseResult.stage)
                                                        .where(CaseResult.id.in_(wanted)))} if wanted else {}
    sim_ids = [r.id for r in rows] if mode == "sim" else wanted
    rule = CaseResult.report["graph_verify"]["rule"].as_string()  # graph verify stopped at the memory limit
    memory = set(session.scalars(select(CaseResult.id).where(CaseResult.id.in_(sim_ids),
                                                             rule == results.GRAPH_MEMORY_RULE))) if sim_ids else set()
    now = utcnow()
    new, changed = [], []
    for r in rows:
        state = states.get((r.operator_id, r.case))
        sim_id = state.sim_result_id if state else None
        npu_id = state.npu_result_id if state else None
        if mode == "sim":
            sim_id, (sim, sim_stage), (npu, npu_stage) = r.id, (r.verdict, r.stage), other.get(npu_id or 0, (None, ""))
        else:
            npu_id, (sim, sim_stage), (npu, npu_stage) = r.id, other.get(sim_id or 0, (None, "")), (r.verdict, r.stage)
        verdict, reason = combined.combine(sim, npu, sim_id in memory, sim_stage or "", npu_stage or "")
        values = {"operator_id": r.operator_id, "case": r.case, "sim_result_id": sim_id, "npu_result_id": npu_id,
                  "combined_verdict": verdict, "reason": reason[:300], "updated_at": now}
        (changed if state else new).append(values)
    if new:
        session.connection().execute(insert(CaseState.__table__), new)
    if changed:
        session.execute(update(CaseState), changed)
    session.flush()
    for op_id in op_ids:
        results.refresh_operator(session, op_id)
