"""Read pytest's --junitxml output (and an optional JSON sidecar of precision metrics) as case results.

The XML comes from outside, so it is parsed with defusedxml and every DTD is refused: no external
entities (XXE), no entity expansion (billion laughs). Sizes are capped by the caller before this.

Mapping, per <testcase> (NPU results only: SIM results come from our runtime, which knows SIM
never measures precision):
| testcase            | verdict          |
|---------------------|------------------|
| no child            | pass             |
| <failure> raised by an assertion (AssertionError, `assert`) | precision_fail |
| any other <failure>, or <error> | structural_error |
| <skipped>           | not_run          |
The operator is the sidecar's, or the `operator` parameter, or the test module's name without
`test_` (`ops.softmax.test_softmax` -> `softmax`); the case is the test's name with its
parameters (`test_softmax[bf16-128]`).
"""
from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime import verdicts
from server.errors import InvalidInput

MAX_TESTCASES = 100_000
LOG_CHARS = 4000  # system-out/err and failure text kept per case


class SidecarCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operator: str | None = Field(default=None, max_length=200)
    case: str | None = Field(default=None, max_length=200)
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    mismatch_ratio: float | None = None
    rtol: float | None = None
    atol: float | None = None


class Sidecar(BaseModel):
    """Optional JSON next to the XML: the environment fingerprint and per-test precision metrics,
    keyed by `classname::name` or by `name`."""
    model_config = ConfigDict(extra="forbid")
    environment: dict[str, str | None] = Field(default_factory=dict)
    cases: dict[str, SidecarCase] = Field(default_factory=dict)


def parse_sidecar(text: bytes | None) -> Sidecar:
    if not text:
        return Sidecar()
    try:
        return Sidecar.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InvalidInput(f"metrics sidecar: {where}: {first.get('msg')}" if where else
                           f"metrics sidecar: {first.get('msg')}") from None


@dataclass
class TestCase:
    classname: str
    name: str
    time_s: float
    outcome: str  # passed | failure | error | skipped
    kind: str  # the failure's type attribute
    message: str
    text: str
    system_out: str
    system_err: str


def parse(data: bytes) -> list[TestCase]:
    """Every <testcase> of a JUnit file; InvalidInput naming what is wrong.

    Streamed: each testcase is read and dropped as its end tag arrives, and the cap applies as the
    file is parsed. Building the whole tree first took +1 GB of memory for a 57 MiB file of testcases
    before the cap was looked at (docs/SECURITY.md).
    """
    out: list[TestCase] = []
    stack: list[Any] = []
    try:
        for event, elem in SafeET.iterparse(io.BytesIO(data), events=("start", "end"), forbid_dtd=True,
                                            forbid_entities=True, forbid_external=True):
            if event == "start":
                if not stack and elem.tag not in ("testsuites", "testsuite"):
                    raise InvalidInput(f"not a JUnit file: the root element is <{elem.tag}>, expected <testsuites> "
                                       "or <testsuite>")
                if elem.tag == "testcase" and not any(e.tag == "testcase" for e in stack) \
                        and len(out) >= MAX_TESTCASES:
                    raise InvalidInput(f"more than {MAX_TESTCASES} testcases in one file; split the upload")
                stack.append(elem)
                continue
            stack.pop()
            if elem.tag == "testcase" and not any(e.tag == "testcase" for e in stack):
                name = (elem.get("name") or "").strip()
                if not name:
                    raise InvalidInput(f"testcase #{len(out) + 1} has no name attribute")
                out.append(_testcase(elem, name))
                if stack:
                    stack[-1].remove(elem)  # read: nothing of it stays in memory
    except DefusedXmlException as exc:
        raise InvalidInput(f"JUnit XML refused: it declares a DTD or entities ({type(exc).__name__}); "
                           "pytest never writes one, and they are how XXE and entity-expansion attacks work") from None
    except ET.ParseError as exc:
        raise InvalidInput(f"JUnit XML is malformed: {exc}") from None
    if not out:
        raise InvalidInput("the JUnit file has no <testcase>: nothing to store")
    return out


def _testcase(tc: Any, name: str) -> TestCase:
    outcome, kind, message, text = "passed", "", "", ""
    for tag in ("error", "failure", "skipped"):
        child = tc.find(tag)
        if child is not None:
            outcome, kind = tag, child.get("type") or ""
            message, text = child.get("message") or "", (child.text or "")
            break
    try:
        time_s = max(0.0, float(tc.get("time") or 0.0))
    except ValueError:
        raise InvalidInput(f"testcase {name!r}: time={tc.get('time')!r} is not a number") from None
    out, err = tc.find("system-out"), tc.find("system-err")
    return TestCase(classname=(tc.get("classname") or "").strip(), name=name, time_s=time_s, outcome=outcome,
                    kind=kind, message=message, text=text,
                    system_out=(out.text or "")[-LOG_CHARS:] if out is not None else "",
                    system_err=(err.text or "")[-LOG_CHARS:] if err is not None else "")


def operator_from_classname(classname: str) -> str:
    """`ops.softmax.test_softmax` -> `softmax`; `tests.test_rmsnorm.TestRmsnorm` -> `rmsnorm`."""
    parts = [p for p in classname.split(".") if p]
    while len(parts) > 1 and parts[-1][:1].isupper():  # a test class
        parts.pop()
    module = parts[-1] if parts else "unknown"
    return re.sub(r"^test_|_test$", "", module) or module


def _is_assertion(t: TestCase) -> bool:
    return "AssertionError" in t.kind or t.message.startswith(("assert ", "AssertionError")) or \
        t.text.lstrip().startswith("AssertionError")


def verdict_of(t: TestCase) -> tuple[str, str, str, str]:
    """(verdict, structural, precision, reason)."""
    if t.outcome == "passed":
        return verdicts.PASS, "ok", "pass", "the test passed"
    if t.outcome == "skipped":
        return verdicts.NOT_RUN, "not_run", "not_applicable", f"skipped: {t.message}"[:300]
    if t.outcome == "failure" and _is_assertion(t):
        return verdicts.PRECISION_FAIL, "ok", "fail", f"the test's assertion failed: {t.message}"[:300]
    return verdicts.STRUCTURAL_ERROR, "error", "not_applicable", f"the test raised: {t.message}"[:300]


def to_cases(tests: list[TestCase], sidecar: Sidecar, operator: str | None) -> list[dict[str, Any]]:
    """Runtime-shaped case dicts (what results and the dashboard read), one per testcase."""
    out = []
    for t in tests:
        extra = sidecar.cases.get(f"{t.classname}::{t.name}") or sidecar.cases.get(t.name) or SidecarCase()
        verdict, structural, precision, reason = verdict_of(t)
        metrics = {k: v for k, v in extra.model_dump(exclude={"operator", "case"}).items() if v is not None}
        error = ({"type": t.kind or t.outcome, "message": (t.message or t.text)[:LOG_CHARS]}
                 if t.outcome in ("failure", "error") else None)
        out.append({
            "operator": (extra.operator or operator or operator_from_classname(t.classname))[:200],
            "case": (extra.case or t.name)[:200], "structural": structural, "verdict": verdict,
            "precision": precision, "stage": "npu", "verdict_reason": reason, "duration_s": t.time_s,
            "metrics": metrics or None, "error": error, "diagnosis": [], "output_written": None,
            "logs": {"stdout": t.system_out, "stderr": t.system_err or t.text[-LOG_CHARS:]},
            "junit": {"classname": t.classname, "name": t.name, "outcome": t.outcome},
        })
    return out
