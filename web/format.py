"""Jinja filters: numbers with sensible significant digits, diff magnitudes, durations, times."""
from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

from runtime import numbers, vocabulary

# One formatter and one vocabulary for the CLI, JUnit and the pages (runtime.numbers, runtime.vocabulary).
GARBAGE_ABS_DIFF = numbers.GARBAGE_ABS_DIFF
SIM_GARBAGE_VERDICTS = numbers.SIM_GARBAGE_VERDICTS
SIM_BROKEN_VERDICTS = numbers.SIM_BROKEN_VERDICTS
sig = numbers.sig
magnitude = numbers.magnitude


def sim_diff(result: Any, flagged: bool | None = None) -> dict[str, Any]:
    """How to show a SIM result's diff: text, whether it is garbage, and a title explaining it.

    `result` is anything with max_abs_diff, nan_count, output_written and verdict (a CaseResult,
    or an operator summary adapted by the view). `flagged` says whether the deciding evidence
    (graph verify or the NPU) cleared the kernel; only then may the title say "not a kernel
    defect". None: decide from the result's own verdict. Garbage on a defect is shown neutral.
    """
    if flagged is None:
        flagged = getattr(result, "verdict", None) in SIM_GARBAGE_VERDICTS
    if result is None:
        return {"text": "—", "garbage": False, "neutral": False, "nan": 0, "title": "no SIM result"}
    diff = getattr(result, "max_abs_diff", None)
    nan = int(getattr(result, "nan_count", None) or 0)
    verdict = getattr(result, "verdict", None)
    garbage = numbers.is_sim_garbage(diff, nan, getattr(result, "output_written", None), verdict)
    if verdict in SIM_BROKEN_VERDICTS and diff is None:
        return {"text": "—", "garbage": False, "neutral": False, "nan": 0,
                "title": f"SIM {verdict}: no output to compare"}
    # an order of magnitude only for garbage (with its tag, in the macro); a measured value as a number
    text = (magnitude(diff) if garbage else sig(diff)) if diff is not None else ("NaN" if nan else "—")
    title = f"max |diff| = {sig(diff)}" if diff is not None else "no diff"
    if garbage and flagged:
        title += ("; the simulator does not write outputs on CPU hosts, so this is leftover memory, "
                  "not a kernel defect")
    elif garbage:
        title += ("; the simulator does not write outputs on CPU hosts, so this is leftover memory: "
                  "no evidence either way (graph verify and the NPU decide)")
    return {"text": text, "garbage": garbage, "neutral": garbage, "nan": nan, "title": title}  # one look: never evidence


# Graph verify's statuses in words (runtime/judge/outcome.py): never the raw id on a page.
GRAPH_WORDS = {"pass": "passed", "fail": "failed", "no_compare": "compared nothing (no assert on a graph output)",
               "unavailable": "gave no verdict", "error": "stopped with an error", "skipped": "not run"}


def graph_status(status: str | None) -> str:
    """A graph verify status in words: no_compare -> 'compared nothing (no assert on a graph output)'."""
    return GRAPH_WORDS.get(status or "", (status or "—").replace("_", " "))


FAKE_GRAPH_TEXT = "failed: output identical to the golden but not written by the kernel"


def graph_cell(status: str | None, diff: Any) -> dict[str, str]:
    """The graph verify cell. A failure with an exact 0 diff is a fake pass (the golden's own
    tensor came back unwritten), never a healthy-looking 0."""
    if status == "pass":
        return {"text": f"✓ {sig(diff)}", "css": "ok", "title": "graph verify matched the golden"}
    if status == "fail" and diff is not None and float(diff) == 0:
        return {"text": f"✗ {FAKE_GRAPH_TEXT}", "css": "bad fake",
                "title": "graph verify failed: the output equals the golden, but the kernel never wrote it"}
    if status == "fail":
        return {"text": f"✗ {sig(diff)}", "css": "bad",
                "title": "graph verify: the tensor graph computes a wrong result"}
    if status:
        return {"text": graph_status(status), "css": "muted", "title": f"graph verify {graph_status(status)}"}
    return {"text": "—", "css": "muted", "title": "no graph verify result"}


NOISE_PREFIX = vocabulary.NOISE_PREFIX


def diagnosis_rules(rules: str | None) -> dict[str, Any]:
    """A stored space-separated rule list as {shown: real rules, noise: how many benign ones}."""
    ids = (rules or "").split()
    shown = vocabulary.explaining_rules(ids)
    return {"shown": shown, "noise": len(ids) - len(shown)}


def duration(seconds: Any) -> str:
    if seconds is None:
        return "—"
    s = float(seconds)
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s * 1e3 < 999.5:  # below that, 3 digits of ms round to 1000: "1e+03 ms"
        return f"{s * 1e3:.3g} ms"
    if s < 1:
        return f"{s:.4g} s"  # 0.9996 s
    if s < 120:
        return f"{s:.3g} s"
    minutes, sec = divmod(round(s), 60)
    if minutes < 120:
        return f"{minutes} min {sec} s"
    return f"{minutes // 60} h {minutes % 60} min"


def ago(value: datetime | None, now: datetime | None = None) -> str:
    """How long ago: '40 s', '12 min', '3 h', '5 d'."""
    if value is None:
        return "never"
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    s = max(0.0, ((now or datetime.now(UTC)) - value).total_seconds())
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.0f} h"
    return f"{s / 86400:.0f} d"


# A job's status in words: "failed" only means the job ran and its verdicts are not acceptable.
STATUS_WORDS = {"failed": "ran · not acceptable", "error": "error (infrastructure)",
                "expired": "expired: no worker", "awaiting_npu": "awaiting an NPU worker"}


def job_status(status: str | None) -> str:
    return STATUS_WORDS.get(status or "", status or "—")


def job_badge(job: Any) -> dict[str, str]:
    """A job's badge: a finished job says its outcome (runtime.vocabulary) in that outcome's colour, the words
    the CLI and JUnit use; others say their status."""
    status = getattr(job, "status", None)
    summary = getattr(job, "summary", None) or {}
    kind = None
    if status in ("succeeded", "failed"):
        kind = summary.get("outcome")
        counts = summary.get("verdicts") or {}
        # stored before the outcome was: its verdicts decide it, unless a not_run's outcome hangs on its stage
        if kind is None and counts and "not_run" not in counts:
            kind = vocabulary.cases_outcome([{"verdict": v} for v in counts], getattr(job, "mode", "sim"))
    if kind in vocabulary.CSS:
        text = vocabulary.word(kind)
        return {"text": text, "css": vocabulary.CSS[kind], "title": f"status {status}: {text}"}
    return {"text": job_status(status), "css": f"st-{status}", "title": f"status {status}"}


def outcome(verdict: str | None, mode: str = "sim", stage: str = "") -> dict[str, str]:
    """{text, css, id} of a verdict's outcome for its mode, for a badge beside the verdict."""
    kind = vocabulary.outcome(verdict, mode, stage)
    return {"text": vocabulary.word(kind), "css": vocabulary.CSS.get(kind or "", ""), "id": kind or ""}


def outcome_badge(kind: str | None) -> dict[str, str]:
    """{text, css, id} of an outcome already decided (an operator's, a run's)."""
    return {"text": vocabulary.word(kind), "css": vocabulary.CSS.get(kind or "", ""), "id": kind or ""}


def percent(value: Any) -> str:
    return "—" if value is None else f"{float(value) * 100:.3g} %"


def iso(value: datetime | None) -> str:
    """ISO-8601 in UTC for <time datetime>; naive datetimes from SQLite are UTC."""
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="seconds")


def utc_text(value: datetime | None) -> str:
    """The no-JS fallback text of a <time>: UTC, minutes precision."""
    if value is None:
        return "—"
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


label = vocabulary.label


def slug(case: str) -> str:
    """An HTML id for a case: case-<safe chars>."""
    return "case-" + re.sub(r"[^A-Za-z0-9_-]+", "-", str(case))[:120]


def structure(verdict: str | None) -> dict[str, str]:
    """The SIM structure column: did the kernel compile and run?"""
    if verdict is None:
        return {"text": "—", "css": "muted", "title": "no SIM result"}
    if verdict in SIM_BROKEN_VERDICTS:
        return {"text": "✗ " + label(verdict), "css": "bad", "title": f"SIM: {verdict}"}
    if verdict == "suspect_fake_pass":
        return {"text": "✗ fake pass", "css": "bad", "title": "the result cannot have come from the kernel"}
    if verdict == "sim_unsupported":
        return {"text": "? SIM cannot simulate", "css": "warn",
                "title": "this host's simulator lacks an op the kernel uses: nothing is known until an NPU runs it"}
    if verdict == "version_skew":
        return {"text": "✗ other pypto", "css": "warn",
                "title": "the kernel was written for another pypto than the worker's (docs/versions.md)"}
    return {"text": "✓ runs", "css": "ok", "title": f"SIM compiled and ran the kernel ({label(verdict)})"}


def ticks(text: Any) -> Markup:
    """Escape, then show `backticked` spans (the diagnosis rules' convention) as <code>."""
    escaped = str(escape(str(text or "")))
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped))


def explain(rules: str | None) -> dict[str, Any] | None:
    from web import fixes  # the rule base loads on first use, not at import

    return fixes.explain(rules)


FILTERS = {"explain": explain, "ago": ago, "job_status": job_status, "job_badge": job_badge, "outcome": outcome,
           "outcome_badge": outcome_badge,
           "nan_inf": numbers.nan_inf, "ticks": ticks, "diagnosis_rules": diagnosis_rules, "graph_cell": graph_cell, "graph_status": graph_status, "sim_diff_of": sim_diff, "slug": slug, "structure": structure,
           "sig": sig, "magnitude": magnitude, "duration": duration, "percent": percent, "iso": iso,
           "utc_text": utc_text, "verdict_label": label}
