"""The runtime's report: what one `crosscheck run` learned, as plain dataclasses.

The JSON shape (schema_version 1) is read by the worker, the API and other tools;
keep field names stable and add, never rename.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1


@dataclass
class LintFinding:
    rule: str
    severity: str  # "error" | "warning" | "info"
    file: str
    line: int
    message: str
    source: str = ""  # the offending line, stripped
    subject: str = ""  # version-skew rules: the pypto name or construct the installed pypto lacks


@dataclass
class Diagnosis:
    rule: str
    cause: str
    fix: str
    sim_only: bool
    stage: str = ""
    evidence: str = ""  # the matched text
    origin: str = ""  # exception | stdout | stderr | plog | exit
    file: str = ""  # the user's file and line, when known
    line: int = 0
    pypto_note: str = ""  # set when the rules were not checked against this host's pypto


@dataclass
class ErrorInfo:
    type: str
    message: str
    file: str = ""
    line: int = 0
    traceback: str = ""


@dataclass
class Stage:
    name: str  # syntax | lint | golden | sim | npu | graph_verify | compare
    status: str  # ok | error | skipped | not_run
    duration_s: float = 0.0
    detail: str = ""


@dataclass
class Launch:
    kernel: str
    output_written: list[bool]
    arg_shapes: list[list[int]]
    duration_s: float = 0.0
    output_dir: str = ""
    error: str = ""


@dataclass
class CostModel:
    aicore_time_us: float
    utilization: float
    total_cycles: int
    aic_tasks: int
    aiv_tasks: int
    output_dir: str = ""
    files: list[str] = field(default_factory=list)


@dataclass
class CaseResult:
    operator: str
    case: str
    shapes: list[list[int]] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    description: str = ""
    structural: str = "not_run"  # ok | error | crash | timeout | oom | resource_limit | not_run
    stage: str = ""  # the last stage reached
    error: ErrorInfo | None = None
    diagnosis: list[Diagnosis] = field(default_factory=list)
    metrics: dict[str, Any] | None = None
    precision: str = "not_applicable"  # pass | fail | not_applicable
    output_written: bool | None = None
    kernel_launches: int = 0
    cost_model: CostModel | None = None
    verdict: str = "not_run"
    verdict_reason: str = ""
    duration_s: float = 0.0
    stages: list[Stage] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    graph_verify: dict[str, Any] | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)  # per output, by name: metrics, graph_metrics
    timing: dict[str, Any] | None = None  # NPU runs whose case asks: median and spread (runtime.timing)
    script: dict[str, Any] | None = None
    logs: dict[str, str] = field(default_factory=dict)  # stdout/stderr/plog tails
    job_dir: str = ""
    evidence_dir: str = ""  # the copies the harness took from the job dir (runtime.evidence)
    # What the harness corroborated outside the job: launches, its recompare, contradictions, refusals.
    evidence: dict[str, Any] = field(default_factory=dict)
    # Verdict version_skew: {installed, kind, names, evidence, found_by} (runtime.skew)
    version_skew: dict[str, Any] | None = None


@dataclass
class Environment:
    pypto: str
    torch: str
    python: str
    host: str
    cann: str | None
    sandbox: dict[str, Any] = field(default_factory=dict)
    runtime: str = ""  # runtime.__version__: part of the key under which a result may be reused
    device: str | None = None  # the NPU the cases ran on ("npu:0"); None in SIM
    npu: dict[str, Any] = field(default_factory=dict)  # NPU runs: card, CANN, driver, SoC (runtime.host)
    torch_npu: str | None = None  # SIM: set when a case imported the CPU stand-in (runtime.standin)


@dataclass
class Submission:
    kind: str  # package | script
    name: str
    sha256: str
    files: list[str] = field(default_factory=list)


@dataclass
class Report:
    submission: Submission
    mode: str
    environment: Environment
    lint: list[LintFinding] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    duration_s: float = 0.0
    cancelled: bool = False  # stopped before every case ran
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)


def from_dict(data: dict[str, Any]) -> Report:
    """Rebuild a Report from its JSON form (the inverse of Report.to_dict)."""
    def build(cls: type, value: Any) -> Any:
        if value is None:
            return None
        kwargs = {}
        names = {f.name: f for f in dataclasses.fields(cls)}
        for key, item in value.items():
            if key not in names:
                continue
            kwargs[key] = item
        return cls(**kwargs)

    cases = []
    for raw in data.get("cases", []):
        case = build(CaseResult, raw)
        case.error = build(ErrorInfo, raw.get("error"))
        case.diagnosis = [build(Diagnosis, d) for d in raw.get("diagnosis", [])]
        case.cost_model = build(CostModel, raw.get("cost_model"))
        case.stages = [build(Stage, s) for s in raw.get("stages", [])]
        case.launches = [build(Launch, x) for x in raw.get("launches", [])]
        cases.append(case)
    return Report(
        submission=build(Submission, data["submission"]),
        mode=data["mode"],
        environment=build(Environment, data["environment"]),
        lint=[build(LintFinding, x) for x in data.get("lint", [])],
        cases=cases,
        duration_s=data.get("duration_s", 0.0),
        cancelled=bool(data.get("cancelled", False)),
        schema_version=data.get("schema_version", SCHEMA_VERSION),
    )
