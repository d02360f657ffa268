"""The runtime's report: what one `crosscheck run` learned. The one contract for it.

Pydantic dataclasses: the runtime builds and writes the report through them (`Report.to_dict`
validates), and the server parses what a worker or an upload posts with the same classes
(`parse`), so a report one side writes is what the other accepts. The JSON schema is exported to
docs/report.schema.json (tests/runtime/test_report_schema.py keeps it current).

The JSON shape (schema_version 1) is read by the worker, the API and other tools;
keep field names stable and add, never rename.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import field
from typing import Any

from pydantic import TypeAdapter, field_validator, model_validator
from pydantic.dataclasses import dataclass

from runtime.modes import Mode
from runtime.verdicts import VERDICTS

SCHEMA_VERSION = 1
RATIO_TOLERANCE = 1e-6  # mismatch_ratio against mismatch_count / numel


@dataclass
class LintFinding:
    rule: str
    severity: str  # "error" | "warning" | "info"
    file: str
    line: int
    message: str
    source: str = ""  # the offending line, stripped
    subject: str = ""  # what the finding is about: the pypto name the installed pypto lacks, the option, ...


@dataclass
class Diagnosis:
    rule: str
    cause: str
    fix: str
    sim_only: bool
    stage: str = ""
    evidence: str = ""  # the matched text
    origin: str = ""  # exception | stdout | stderr | plog | exit | verdict | lint | launch
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
    timing: dict[str, Any] | None = None  # NPU runs whose case asks: median and spread (runtime.job.timing)
    script: dict[str, Any] | None = None
    logs: dict[str, str] = field(default_factory=dict)  # stdout/stderr/plog tails
    job_dir: str = ""
    evidence_dir: str = ""  # the copies the harness took from the job dir (runtime.evidence.evidence)
    # What the harness corroborated outside the job: launches, its recompare, contradictions, refusals.
    evidence: dict[str, Any] = field(default_factory=dict)
    # Verdict version_skew: {installed, kind, names, evidence, found_by} (runtime.judge.skew)
    version_skew: dict[str, Any] | None = None
    # A sim_unsupported case: what this host's SIM lacks (runtime.judge.simgap); no kernel defect
    sim_gap: str | None = None
    # torch_npu fused ops the golden (or test) ran as the SIM stand-in's CPU references (docs/realops.md §12)
    cpu_references: list[str] = field(default_factory=list)

    @field_validator("verdict")
    @classmethod
    def _known_verdict(cls, value: str) -> str:
        if value not in VERDICTS:
            raise ValueError(f"{value!r} is not a known verdict")
        return value

    @field_validator("metrics")
    @classmethod
    def _possible_metrics(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = impossible_metrics(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("outputs")
    @classmethod
    def _possible_output_metrics(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, out in enumerate(value):
            for key in ("metrics", "graph_metrics"):
                problem = impossible_metrics(out.get(key) if isinstance(out, dict) else None)
                if problem:
                    raise ValueError(f"outputs[{i}].{key}: {problem}")
        return value


    @field_validator("graph_verify")
    @classmethod
    def _bounded_graph_map(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        m = (value or {}).get("metrics")
        problem = _map_problem(m) if isinstance(m, dict) else None
        if problem:
            raise ValueError(f"graph_verify.metrics: {problem}")
        return value

    @model_validator(mode="after")
    def _pass_agrees_with_its_metrics(self) -> "CaseResult":
        problem = impossible_pass(self.metrics) if self.verdict == "pass" else None
        if problem:
            raise ValueError(f"verdict pass contradicts its own metrics: {problem}")
        return self


def impossible_pass(m: dict[str, Any] | None) -> str | None:
    """What no tolerance allows in a passing result: a shape that differs, NaN, or more mismatches than any
    case may accept (runtime.intake.cases.MAX_MISMATCH_RATIO_CAP). An upload once read "pass" with 100 % mismatches."""
    from runtime.intake.cases import MAX_MISMATCH_RATIO_CAP

    if not isinstance(m, dict):
        return None
    if m.get("shape_match") is False:
        return "the output's shape differs from the golden's"
    if isinstance(m.get("nan_count"), int) and m["nan_count"] > 0:
        return f"{m['nan_count']} NaN in the output"
    ratio = m.get("mismatch_ratio")
    if ratio is None and isinstance(m.get("mismatch_count"), int) and isinstance(m.get("numel"), int) and m["numel"]:
        ratio = m["mismatch_count"] / m["numel"]
    if isinstance(ratio, (int, float)) and ratio > MAX_MISMATCH_RATIO_CAP:
        return f"{ratio:.1%} of the elements are outside tolerance (a case may accept at most {MAX_MISMATCH_RATIO_CAP:.0%})"
    return None


def impossible_metrics(m: dict[str, Any] | None) -> str | None:
    """What makes a metrics dict impossible (counts beyond numel, a ratio that disagrees with its
    count), or None. A posted NPU result once read "1,857/2,048 (0 %)"."""
    if not isinstance(m, dict):
        return None
    numel = m.get("numel")
    counts = {k: m.get(k) for k in ("mismatch_count", "nan_count", "inf_count")}
    for key, count in {"numel": numel, **counts}.items():
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
            return f"{key} must be a count (a non-negative integer), got {count!r}"
    if isinstance(numel, int):
        for key, count in counts.items():
            if isinstance(count, int) and count > numel:
                return f"{key} {count} is larger than numel {numel}"
    problem = _map_problem(m)
    if problem:
        return problem
    ratio, mismatches = m.get("mismatch_ratio"), counts["mismatch_count"]
    if ratio is not None:
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0.0 <= ratio <= 1.0:
            return f"mismatch_ratio must be between 0 and 1, got {ratio!r}"
        if isinstance(numel, int) and numel > 0 and isinstance(mismatches, int) and \
                not math.isclose(ratio, mismatches / numel, rel_tol=RATIO_TOLERANCE, abs_tol=RATIO_TOLERANCE):
            return f"mismatch_ratio {ratio} disagrees with mismatch_count/numel = {mismatches}/{numel}"
    return None


# The mismatch map's stored form: part of the contract, so that its bounds hold on every report the server
# accepts; runtime.evidence.mismatch_map builds and reads it (docs/dashboard.md §2).
MISMATCH_MAP = "mismatch_map"  # the metrics key holding it
MAP_MAX_CELLS = 64  # cells per side
MAP_FIRST_INDICES = 16


def map_grid(shape: list[int]) -> tuple[int, int]:
    """The 2-D reading of an output's shape: (rows, columns); a 1-D output is one row."""
    numel = math.prod(shape)
    if len(shape) < 2:
        return 1, numel
    return math.prod(shape[:-1]), shape[-1]


def map_problem(summary: Any, numel: Any) -> str | None:
    """What makes a stored mismatch map malformed or unbounded, or None."""
    if not isinstance(summary, dict):
        return "must be an object"
    shape, cells, first = summary.get("shape"), summary.get("cells"), summary.get("first")
    if not isinstance(shape, list) or len(shape) > 64 or not all(type(d) is int and d >= 0 for d in shape):
        return "shape must be a list of at most 64 sizes"
    if isinstance(numel, int) and math.prod(shape) != numel:
        return f"shape {shape} does not hold numel {numel} elements"
    rows, cols = map_grid(shape)
    if (summary.get("rows"), summary.get("cols")) != (rows, cols):
        return f"rows × cols must be {rows} × {cols} for shape {shape}"
    height, width = min(rows, MAP_MAX_CELLS), min(cols, MAP_MAX_CELLS)
    if not isinstance(cells, list) or len(cells) != height or not all(
            isinstance(line, str) and len(line) == width and line.isascii() and line.isdigit() for line in cells):
        return f"cells must be {height} strings of {width} digits"
    if not isinstance(first, list) or len(first) > MAP_FIRST_INDICES or not all(
            type(i) is int and 0 <= i < rows * cols for i in first):
        return f"first must hold at most {MAP_FIRST_INDICES} flat indices of the output"
    return None


def _map_problem(m: dict[str, Any]) -> str | None:
    """A mismatch map that is malformed, unbounded or drawn for a compare without mismatches."""
    if MISMATCH_MAP not in m:
        return None
    if not m.get("mismatch_count"):
        return f"{MISMATCH_MAP} given for a compare without mismatches"
    # A compare on some rows only (graph verify's row slices, runtime.evidence.slice_sample) counts those rows'
    # elements; its map is of the whole output, the rows not verified left empty.
    problem = map_problem(m[MISMATCH_MAP], m.get("numel") if "rows" not in m else None)
    return f"{MISMATCH_MAP}: {problem}" if problem else None


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
    npu: dict[str, Any] = field(default_factory=dict)  # NPU runs: card, CANN, driver, SoC (runtime.devices.host)
    torch_npu: str | None = None  # SIM: set when a case imported the CPU stand-in (runtime.devices.standin)


@dataclass
class Submission:
    kind: str  # package | script
    name: str
    sha256: str
    files: list[str] = field(default_factory=list)
    # How the cases were found: test_cases.json | test functions | --list | test_cases.json beside |
    # the script whole | --case (runtime.runner _find_cases; in words: runtime.cli.console CASES_FROM_TEXT)
    cases_from: str = ""


@dataclass
class Report:
    submission: Submission
    mode: Mode
    environment: Environment
    lint: list[LintFinding] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    duration_s: float = 0.0
    cancelled: bool = False  # stopped before every case ran
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, checked against the contract (fields set after construction included)."""
        data = dataclasses.asdict(self)
        REPORT.validate_python(data)
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)


REPORT: TypeAdapter[Report] = TypeAdapter(Report)


def from_dict(data: dict[str, Any]) -> Report:
    """Rebuild a Report from its JSON form (the inverse of Report.to_dict); ValidationError names
    the first field that breaks the contract."""
    return REPORT.validate_python(data)


def json_schema() -> dict[str, Any]:
    """The report's JSON schema (docs/report.schema.json)."""
    return REPORT.json_schema()

