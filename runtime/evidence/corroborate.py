"""Hold the job's own report against what the harness checked outside the job (docs/SECURITY.md).

The job's events come from the kernel's process and can be forged; report["evidence"] comes
from the job's leader (runtime.evidence.evidence). Here they meet: only corroborated launches count, the
harness's recompare replaces the job's metrics, and every place where the two disagree is a
contradiction, which runtime.verdicts never accepts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.evidence.dumps import disagreement

MAX_CONTRADICTIONS = 10


@dataclass
class Checked:
    """What the verdict may rest on for one case."""
    launches: int = 0  # launches corroborated by pypto's call folders
    metrics: dict[str, Any] | None = None  # the harness's recompare when there is one
    graph_metrics: dict[str, Any] | None = None
    graph_written: bool | None = None
    output_written: bool | None = None
    changed_after_launch: bool = False
    rechecked: bool = False
    contradictions: list[str] = field(default_factory=list)
    uncorroborated: list[str] = field(default_factory=list)
    pypto_graph: dict[str, Any] | None = None
    pypto_passes: dict[str, Any] | None = None
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reported: int = 0
    duration_s: float = 0.0  # the leader's time taking and checking the evidence
    per_output: list[dict[str, Any]] = field(default_factory=list)  # the harness's recompare of each output

    def summary(self) -> dict[str, Any]:
        """CaseResult.evidence: what was corroborated, for the report and the dashboard."""
        return {"launches_reported": self.reported, "launches_corroborated": self.launches,
                "uncorroborated": self.uncorroborated[:MAX_CONTRADICTIONS], "rechecked": self.rechecked,
                "changed_after_launch": self.changed_after_launch,
                "contradictions": self.contradictions[:MAX_CONTRADICTIONS], "refused_files": self.refused,
                "notes": self.notes, "duration_s": self.duration_s}


def _count(events: list[dict[str, Any]], kind: str) -> int:
    return sum(1 for e in events if e.get("event") == kind)


def check(is_script: bool, events: list[dict[str, Any]], found: dict[str, Any],
          result_ev: dict[str, Any] | None) -> Checked:
    out = Checked(metrics=(result_ev or {}).get("metrics") if isinstance((result_ev or {}).get("metrics"), dict)
                  else None, reported=_count(events, "launch"))
    if not found:  # the leader died before it could look: nothing is corroborated
        out.notes.append("no evidence from the job's leader")
        out.output_written = False if result_ev else None
        return out
    out.refused = [str(r) for r in found.get("refused") or []]
    out.duration_s = float(found.get("duration_s") or 0.0)
    out.notes = [str(n) for n in found.get("notes") or []]
    out.pypto_graph, out.pypto_passes = found.get("pypto_graph"), found.get("pypto_passes")
    _launches(out, found)
    _stream(out, events, found)
    if not is_script and result_ev is not None:
        _recheck(out, found.get("recheck"), result_ev)
        out.contradictions += [str(c) for c in found.get("verify_csv_contradictions") or []][:MAX_CONTRADICTIONS]
    elif not is_script:
        out.output_written = None
    return out


def _launches(out: Checked, found: dict[str, Any]) -> None:
    launches = [x for x in found.get("launches") or [] if isinstance(x, dict)]
    out.launches = sum(1 for x in launches if x.get("call"))
    missing = [x for x in launches if not x.get("call") and not x.get("failed")]
    out.uncorroborated = [f"launch {x.get('index')} ({x.get('kernel')}): {x.get('why')}" for x in missing]
    if missing and out.launches:
        out.contradictions.append(f"{len(missing)} of {len(launches)} launch events are not corroborated by "
                                  f"pypto's call folders ({out.uncorroborated[0]})")


def _stream(out: Checked, events: list[dict[str, Any]], found: dict[str, Any]) -> None:
    """The event stream's own consistency: one report of each kind, and the integrity check."""
    if found.get("events_truncated"):
        out.contradictions.append(str(found["events_truncated"]))
    for kind in ("result", "script_result", "golden", "integrity"):
        if _count(events, kind) > 1:
            out.contradictions.append(f"the job sent its '{kind}' event {_count(events, kind)} times")
    tampered = [e for e in events if e.get("event") == "tamper"]
    if tampered:  # reported as it happened (runtime.fence.audit, runtime.evidence.launch_seal)
        first = tampered[0]
        where = f" at {str(first.get('file'))[-200:]}:{first.get('line')}" if first.get("file") else ""
        more = f" (and {len(tampered) - 1} more)" if len(tampered) > 1 else ""
        out.contradictions.append(f"the job tampered with the evidence: it {str(first.get('what'))[:400]}{where}{more}")
    integrity = next((e for e in events if e.get("event") == "integrity"), None)
    finished = any(e.get("event") in ("result", "script_result") for e in events)
    if integrity is not None and not integrity.get("ok"):
        changed = ", ".join(str(c) for c in (integrity.get("changed") or [])[:5])
        out.contradictions.append(f"the job changed the harness's code in its process: {changed}")
    elif integrity is None and finished:
        out.contradictions.append("the job finished its case but its integrity report never arrived")


def _recheck(out: Checked, rc: Any, result_ev: dict[str, Any]) -> None:
    if not isinstance(rc, dict) or not ("error" in rc or "metrics" in rc):
        out.contradictions.append("the job reported a result the harness could not recheck")
        out.output_written = False
        return
    if "error" in rc:
        out.contradictions.append(f"the harness could not recheck the job's result: {rc['error']}")
        out.output_written = False
        return
    out.rechecked = True
    job_metrics, job_graph = result_ev.get("metrics"), (result_ev.get("graph_verify") or {}).get("metrics")
    out.metrics, out.graph_metrics = rc.get("metrics"), rc.get("graph_metrics")
    for what, job, ours in (("metrics", job_metrics, out.metrics), ("graph metrics", job_graph, out.graph_metrics)):
        why = disagreement(job if isinstance(job, dict) else None, ours)
        if why:
            out.contradictions.append(f"the job's {what} differ from the harness's recompare ({why})")
    outputs = [o for o in rc.get("outputs") or [] if isinstance(o, dict)]
    provenance = result_ev.get("provenance") if isinstance(result_ev.get("provenance"), list) else []
    for i, (o, p) in enumerate(zip(outputs, provenance)):
        claimed = bool(isinstance(p, dict) and p.get("written"))
        if claimed != bool(o.get("launch_wrote")):
            said = "wrote" if claimed else "did not write"
            out.contradictions.append(f"output {i}: the job says its launch {said} it; the dumped bytes say otherwise")
    out.per_output = [{"metrics": o.get("metrics"), "graph_metrics": o.get("graph_metrics")} for o in outputs]
    out.changed_after_launch = any(o.get("changed_after_launch") for o in outputs)
    if out.changed_after_launch and rc.get("graph_metrics") is not None:
        # The graph's result is what the launch left; bytes written over it afterwards are nobody's evidence.
        out.contradictions.append("an output changed after its last launch wrote the graph's result into it: code "
                                  "outside the kernel overwrote it")
    out.graph_written = bool(outputs) and all(o.get("launch_wrote") for o in outputs)
    out.output_written = out.graph_written and not out.changed_after_launch
