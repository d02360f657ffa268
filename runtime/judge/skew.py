"""Version skew: a failure that says the kernel was written for another pypto, not that it is wrong.

Two signatures, each checked against real pypto 0.2.0 (docs/versions.md §1):
- a pypto name the installed pypto lacks ("module 'pypto' has no attribute 'PrecisionType'");
- a pypto call it spells differently (an unknown keyword, or "Unable to cast Python instance of type
  <class 'dict'> to C++ type '?'" for a dict keyed by names where 0.2.0 takes Dict[int, int]).
A return annotation ("Return annotation is not allowed") is no skew: every pypto from r0.2.0 on refuses it,
so it is the kernel's structural error (docs/pypto.md §9).
The lint's version-skew findings (runtime.lint.api) on the failing line name what the text cannot.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from runtime.judge.diagnose import is_user_file
from runtime.lint.rules import API_MISSING, CALL_MISMATCH, VERSION_SKEW_RULES
from runtime.report import ErrorInfo, LintFinding

MISSING_API = "missing_api"
CALL = "call"

_MODULE_ATTR = re.compile(r"module '(pypto(?:\.\w+)*)' has no attribute '(\w+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '(pypto(?:\.\w+)*)'")
_NO_MODULE = re.compile(r"No module named '(pypto\.[\w.]+)'")
_TYPE_ATTR = re.compile(r"type object '(\w+)' has no attribute '(\w+)'")
_CALL_ERRORS = re.compile(
    r"Unable to cast Python instance of type <class '\w+'> to C\+\+ type|incompatible function arguments"
    r"|(\w+)\(\) got an unexpected keyword argument '(\w+)'|(\w+)\(\) takes (?:from \d+ to )?\d+ positional")
# A failure of the kind a missing or changed API raises, possibly inside pypto's parser error.
_SKEW_LIKE = re.compile(r"(?:[\w.]*ParserError: )?[\w.]*(?:AttributeError|TypeError|ImportError|ModuleNotFoundError)\b")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"\n]+)", line (?P<line>\d+), in \S+\n(?P<src>[^\n]*)', re.MULTILINE)
_PYPTO_CALL = re.compile(r"\b(pypto(?:\.\w+)+)\s*\(")
_SKEW_FINDING_KIND = {API_MISSING: MISSING_API, CALL_MISMATCH: CALL}


@dataclass
class VersionSkew:
    """What the installed pypto lacks, and how we know."""

    installed: str  # this host's pypto version
    kind: str  # missing_api | call
    names: list[str] = field(default_factory=list)  # the pypto names or constructs involved
    evidence: str = ""  # the error line, or the lint finding's message
    found_by: str = "error"  # error (the failure's text) | lint (a finding on the failing line)

    def describe(self) -> str:
        what = ", ".join(f"`{n}`" for n in self.names) or "its API"
        if self.kind == MISSING_API:
            return f"the installed pypto {self.installed} has no {what}"
        return f"the installed pypto {self.installed} does not take the call {what}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect(error: ErrorInfo | None, texts: str, findings: list[LintFinding], installed: str) -> VersionSkew | None:
    """The version skew behind a failed case, or None when its failure is something else.

    `texts` is what else the case printed (stderr and stdout: scripts print their traceback there);
    `findings` the lint's version-skew findings for the submission.
    """
    message = f"{error.type}: {error.message}" if error else ""
    traceback = error.traceback if error else ""
    whole = "\n".join((message, traceback, texts))
    skew = _from_text(message, traceback, whole, installed)
    linted = _on_line(findings, error) if error else []
    if skew is None:
        # Only the failure itself decides: a PermissionError on a line the lint flagged is not skew, whatever
        # else the case printed (pypto's drawing scripts print ModuleNotFoundError to stderr on every call).
        if linted and error is not None and _failed_like_skew(message):
            first = linted[0]
            return VersionSkew(installed, _SKEW_FINDING_KIND[first.rule], [f.subject for f in linted if f.subject],
                               first.message, "lint")
        return None
    for finding in linted:  # the lint knows the exact names (a call's keyword, the annotation's text)
        if not finding.subject or finding.subject in skew.names or _SKEW_FINDING_KIND[finding.rule] != skew.kind:
            continue
        shorter = [n for n in skew.names if finding.subject.startswith(n + "(")]
        skew.names = [n for n in skew.names if n not in shorter] + [finding.subject]
    if not skew.names and linted:
        skew.names = [f.subject for f in linted if f.subject]
    return skew


def _from_text(message: str, traceback: str, whole: str, installed: str) -> VersionSkew | None:
    for pattern, build in ((_MODULE_ATTR, lambda m: f"{m[1]}.{m[2]}"), (_CANNOT_IMPORT, lambda m: f"{m[2]}.{m[1]}"),
                           (_NO_MODULE, lambda m: m[1])):
        found = pattern.search(whole)
        if found:
            return VersionSkew(installed, MISSING_API, [build(found)], _line_of(whole, found))
    found = _TYPE_ATTR.search(whole)
    if found:
        qualified = re.search(rf"\b(pypto(?:\.\w+)*\.{found[1]})\.{found[2]}\b", whole)
        if qualified:
            return VersionSkew(installed, MISSING_API, [f"{qualified[1]}.{found[2]}"], _line_of(whole, found))
    found = _CALL_ERRORS.search(whole)
    if found:
        call = _failing_pypto_call(traceback or whole, found[1] or found[3])
        if call:
            keyword = f"({found[2]}=...)" if found[2] else ""
            return VersionSkew(installed, CALL, [call + keyword], _line_of(whole, found))
    return None


def _failing_pypto_call(traceback: str, function: str | None) -> str | None:
    """The pypto function called on the deepest line of the submission's own code in the traceback."""
    frames = [f for f in _FRAME.finditer(traceback) if is_user_file(f["file"])]
    if not frames:
        return None
    calls = _PYPTO_CALL.findall(frames[-1]["src"])
    if function:
        calls = [c for c in calls if c.rsplit(".", 1)[-1] == function]
    return calls[0] if calls else None


def _on_line(findings: list[LintFinding], error: ErrorInfo) -> list[LintFinding]:
    """The version-skew findings on the failing line."""
    if not error.file:
        return []
    return [f for f in findings if f.rule in VERSION_SKEW_RULES and f.file.endswith(error.file.rsplit("/", 1)[-1])
            and f.line == error.line]


def _failed_like_skew(message: str) -> bool:
    """An AttributeError/TypeError/ImportError-like failure: the kind a missing or changed API raises.

    `message` is the failure's own "type: message" line (a RenderedParserError carries the underlying
    error's type at the start of its message)."""
    return bool(_SKEW_LIKE.match(message)) or "Unable to cast" in message


def _line_of(text: str, found: re.Match[str]) -> str:
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.end())
    return " ".join(text[start:end if end >= 0 else None].split())[:300]
