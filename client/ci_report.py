"""What `crosscheck ci run` says beyond the gate: the cases by outcome with their job links, and CI
annotations at file:line for lint findings and diagnoses (GitHub Actions workflow commands, GitLab
code-quality JSON; docs/ci.md, "The command")."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding

from runtime import vocabulary
from client.junit_out import job_url

ANNOTATIONS = ("github", "gitlab")
LISTED = 15  # cases printed per outcome; the suite page has them all
# GitLab code-quality severities, from a lint finding's or an outcome's weight.
_GITLAB_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def outcome_of(r: dict[str, Any]) -> str | None:
    """A suite result row's outcome (runtime.vocabulary), None while pending."""
    return vocabulary.outcome(r.get("verdict"), r["mode"], str(r.get("stage") or ""))


def print_outcomes(out: Console, results: list[dict[str, Any]], run_url: str) -> None:
    """The cases that are not acceptable, by outcome, worst first, each with its job page."""
    for kind in vocabulary.OUTCOMES[:-1]:
        rows = [r for r in results if outcome_of(r) == kind]
        if not rows:
            continue
        out.print(f"[{vocabulary.RICH[kind]}]{vocabulary.word(kind).capitalize()}[/] ({len(rows)}):", highlight=False)
        for r in rows[:LISTED]:
            link = job_url(run_url, r.get("job_id"))
            out.print(Padding(f"{escape(r['operator'])} / {escape(r['case'])} ({r['mode'].upper()}): "
                              f"{escape(vocabulary.headline(r))}", (0, 0, 0, 2)), highlight=False)
            if link:  # on a line of its own, never wrapped: a terminal or CI log keeps it clickable
                out.print(f"    {link}", highlight=False, soft_wrap=True)
        if len(rows) > LISTED:
            out.print(f"  ... and {len(rows) - LISTED} more on the suite page", highlight=False)


def counts_line(results: list[dict[str, Any]]) -> str:
    """'1 kernel defect, 0 infrastructure or harness, 2 cannot judge here, 5 acceptable'."""
    kinds = [outcome_of(r) for r in results]
    return ", ".join(f"{kinds.count(o)} {vocabulary.word(o)}" for o in vocabulary.OUTCOMES)


def _where(checkout: Path, folder: str, file: str) -> str | None:
    """A report's file as a path in the checkout (a package's files are relative to its folder), or None
    when it is no file of the checkout (pypto's own, a temp dir)."""
    for rel in (file, f"{folder}/{file}" if folder not in ("", ".") else file):
        path = (checkout / rel)
        if rel and not Path(rel).is_absolute() and ".." not in Path(rel).parts and path.is_file():
            return Path(rel).as_posix()
    return None


def findings(reports: list[tuple[dict[str, Any], str]], checkout: Path) -> list[dict[str, Any]]:
    """Lint findings and diagnoses with a file:line in the checkout, once each: {file, line, level, title,
    message}. `reports`: (job report, the operator's folder in the checkout)."""
    seen: dict[tuple[str, int, str], dict[str, Any]] = {}
    for report, folder in reports:
        for f in report.get("lint") or []:
            where = _where(checkout, folder, str(f.get("file") or ""))
            if where and f.get("line"):
                level = "error" if f.get("severity") == "error" else "warning" if f.get("severity") == "warning" \
                    else "notice"
                seen.setdefault((where, int(f["line"]), str(f["rule"])), {
                    "file": where, "line": int(f["line"]), "level": level, "title": f"lint {f['rule']}",
                    "message": str(f.get("message") or "")})
        for case in report.get("cases") or []:
            kind = vocabulary.outcome(case.get("verdict"), str(report.get("mode") or ""), str(case.get("stage") or ""))
            for d in case.get("diagnosis") or []:
                where = _where(checkout, folder, str(d.get("file") or ""))
                if not where or not d.get("line") or vocabulary.is_noise(str(d.get("rule") or "")):
                    continue
                seen.setdefault((where, int(d["line"]), str(d["rule"])), {
                    "file": where, "line": int(d["line"]), "level": "error" if kind == vocabulary.FAILED else "warning",
                    "title": f"{vocabulary.word(kind)}: {d['rule']}",
                    "message": f"{d.get('cause') or ''} Fix: {d.get('fix') or ''}".strip()})
    return list(seen.values())


def _escape_github(text: str, prop: bool = False) -> str:
    """GitHub's workflow-command escaping (a property also escapes ':' and ',')."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github(items: list[dict[str, Any]]) -> str:
    """`::error file=F,line=L,title=T::message` lines, one per finding."""
    return "".join(f"::{i['level']} file={_escape_github(i['file'], True)},line={i['line']},"
                   f"title={_escape_github(i['title'], True)}::{_escape_github(i['message'])}\n" for i in items)


def gitlab(items: list[dict[str, Any]]) -> str:
    """GitLab's code-quality report: a JSON array of {description, check_name, fingerprint, severity, location}."""
    out = []
    for i in items:
        severity = _GITLAB_SEVERITY["error" if i["level"] == "error" else "warning" if i["level"] == "warning"
                                    else "info"]
        fingerprint = hashlib.sha256(f"{i['file']}:{i['line']}:{i['title']}".encode()).hexdigest()
        out.append({"description": f"{i['title']}: {i['message']}", "check_name": i["title"],
                    "fingerprint": fingerprint, "severity": severity,
                    "location": {"path": i["file"], "lines": {"begin": i["line"]}}})
    return json.dumps(out, indent=2)
