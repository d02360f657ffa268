"""Write a suite run as JUnit XML: one <testsuite> per operator, one <testcase> per case x mode.

Properties carry the verdict, the diffs, the diagnosis rules, the provenance and, for a case whose
precision drifts, why (`drift`: never a failure by itself), and for a case whose SIM cost estimate
rose, by how much (`perf`: never a failure by itself either), and the commit `ci run --bisect` found
(`culprit`), its outcome in words and its job page (`url`, also in system-out). A case's outcome
(runtime.vocabulary) picks the element: a kernel defect is a <failure>, infrastructure or harness an
<error>, cannot judge here a <skipped> with the reason (its verdict is the type); an operator that could
not be submitted or a case still pending is an <error>. tests/data/junit.xsd is the shape it follows.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime import vocabulary

PROPERTIES = ("verdict", "mode", "max_abs_diff", "graph_max_abs_diff", "rtol", "atol", "diagnosis_rules",
              "provenance", "flips", "reused_from_job_id", "job_id", "drift", "perf", "culprit")


@dataclass
class Broken:
    """An operator that never became results: it cannot run, or the server refused it."""
    operator: str
    why: str


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)  # a property is data: the exact value; messages use runtime.numbers
    return str(value)


def job_url(run_url: str, job_id: Any) -> str:
    """The job page beside a suite run's page: http://host/suite-runs/5 -> http://host/jobs/12."""
    base = run_url.split("/suite-runs/")[0] if "/suite-runs/" in run_url else run_url.rstrip("/")
    return f"{base}/jobs/{job_id}" if job_id else ""


def _case(parent: ET.Element, suite: str, r: dict[str, Any], run_url: str) -> str | None:
    """The outcome this testcase adds (runtime.vocabulary), None while pending."""
    tc = ET.SubElement(parent, "testcase", classname=f"crosscheck.{suite}.{r['operator']}",
                       name=f"{r['case']} [{r['mode']}]", time=f"{float(r.get('duration_s') or 0.0):.3f}")
    props = ET.SubElement(tc, "properties")
    link = job_url(run_url, r.get("job_id"))
    kind = vocabulary.outcome(r.get("verdict"), r["mode"], str(r.get("stage") or ""))
    for name in PROPERTIES:
        value = r.get(name)
        if value not in (None, ""):
            ET.SubElement(props, "property", name=name, value=_fmt(value))
    if kind:
        ET.SubElement(props, "property", name="outcome", value=vocabulary.word(kind))
    if link:
        ET.SubElement(props, "property", name="url", value=link)
    if kind is None:
        ET.SubElement(tc, "error", message="still pending when the client stopped waiting", type="pending")
    elif kind in vocabulary.JUNIT:
        why = r.get("error") or ("" if r.get("reused_from_job_id") else r.get("note")) or ""
        # headed by the outcome, the deciding evidence and the rule that explains it; noise rules never (runtime.vocabulary)
        head = vocabulary.headline(r)
        element = ET.SubElement(tc, vocabulary.JUNIT[kind], message=f"{r['mode'].upper()}: {head}"[:1000],
                                type=str(r.get("verdict")))
        element.text = f"{r['operator']} / {r['case']} ({r['mode'].upper()}): {head}\n{why}\n{link or run_url}"
    out = ET.SubElement(tc, "system-out")
    out.text = f"{r.get('provenance') or ''}\n{link + chr(10) if link else ''}{run_url}"
    return "pending" if kind is None else kind


def build(suite: str, run_url: str, results: Iterable[dict[str, Any]], broken: Iterable[Broken] = (),
          timestamp: datetime | None = None) -> ET.ElementTree:
    by_op: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_op.setdefault(r["operator"], []).append(r)
    broken_by_op = {b.operator: b for b in broken}
    stamp = (timestamp or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", name=f"crosscheck {suite}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for i, op in enumerate(sorted(by_op.keys() | broken_by_op.keys())):
        rows = sorted(by_op.get(op, []), key=lambda r: (r["case"], r["mode"]))
        ts = ET.SubElement(root, "testsuite", name=op, id=str(i), timestamp=stamp)
        props = ET.SubElement(ts, "properties")
        ET.SubElement(props, "property", name="suite_run", value=run_url)
        kinds = [_case(ts, suite, r, run_url) for r in rows]
        failures, skipped = kinds.count(vocabulary.FAILED), kinds.count(vocabulary.SKIPPED)
        errors = kinds.count(vocabulary.BROKEN) + kinds.count("pending")
        if op in broken_by_op:
            tc = ET.SubElement(ts, "testcase", classname=f"crosscheck.{suite}.{op}", name="(submission)", time="0.000")
            err = ET.SubElement(tc, "error", message=broken_by_op[op].why[:1000], type="not_submitted")
            err.text = broken_by_op[op].why
            errors += 1
        tests = len(rows) + (op in broken_by_op)
        took = sum(float(r.get("duration_s") or 0.0) for r in rows)
        ts.set("tests", str(tests))
        ts.set("failures", str(failures))
        ts.set("errors", str(errors))
        ts.set("skipped", str(skipped))
        ts.set("time", f"{took:.3f}")
        for k, v in (("tests", tests), ("failures", failures), ("errors", errors), ("skipped", skipped),
                     ("time", took)):
            totals[k] += v
    for k in ("tests", "failures", "errors", "skipped"):
        root.set(k, str(int(totals[k])))
    root.set("time", f"{totals['time']:.3f}")
    ET.indent(root)
    return ET.ElementTree(root)


def write(path: Path, tree: ET.ElementTree) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
