"""Explain a failed case: match its texts against the rule base in rules/diagnosis.toml."""
from __future__ import annotations

import functools
import pathlib
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from runtime.modes import MODES
from runtime.report import Diagnosis

RULES_PATH = pathlib.Path(__file__).with_name("rules") / "diagnosis.toml"
# Where a rule's regexes may look; also the order in which evidence is taken.
SOURCES = ("exception", "stderr", "plog", "stdout", "exit")
STAGES = ("syntax", "lint", "device", "golden", "sim", "npu", "graph_verify", "compare", "timing")
EVIDENCE_CHARS = 300
NOISE_PREFIX = "noise-"

_REQUIRED = ("id", "title", "match", "cause", "fix", "sim_only", "priority")
_OPTIONAL = ("sources", "stages", "modes", "noise", "fallback")
_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# pypto's coloured diagnostics and the terminal codes some tools print.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# pypto's parser diagnostic: "ERROR /path/impl.py:11:4: TypeError: ..." ("INTERNAL BUG ..." carries no location).
_PYPTO_LOCATION = re.compile(r"^\s*ERROR\s+(?P<file>[^\s:][^:\n]*?):(?P<line>\d+):\d+:", re.MULTILINE)
_TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"\n]+)", line (?P<line>\d+)', re.MULTILINE)
# Frames that are never the user's: installed packages, the standard library, frozen/generated code.
_NOT_USER = re.compile(r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python3(?:\.\d+)?[/\\]|^<")
_RUNTIME_DIR = str(pathlib.Path(__file__).resolve().parents[1])  # runtime/, not runtime/judge/


@dataclass(frozen=True)
class Rule:
    """One known failure signature (see the header of rules/diagnosis.toml)."""

    id: str
    title: str
    match: tuple[re.Pattern[str], ...]
    cause: str
    fix: str
    sim_only: bool
    priority: int
    sources: tuple[str, ...] = SOURCES
    stages: tuple[str, ...] = ()  # empty: any stage
    modes: tuple[str, ...] = MODES
    noise: bool = False
    fallback: bool = False

    @property
    def specificity(self) -> int:
        """Tie-breaker among equal priorities: more and longer regexes first."""
        return len(self.match) * 1000 + sum(len(p.pattern) for p in self.match)


def load_rules(path: pathlib.Path | None = None) -> list[Rule]:
    """Load and validate a rule file (default: the packaged rules/diagnosis.toml).

    Raises ValueError naming the offending rule when an id is duplicated or malformed, a
    required key is missing, a key is unknown, a value has the wrong type or a regex does not
    compile.
    """
    if path is None:
        return list(_default_rules())
    return _load(pathlib.Path(path))


@functools.lru_cache(maxsize=1)
def _default_rules() -> tuple[Rule, ...]:
    return tuple(_load(RULES_PATH))


def _load(path: pathlib.Path) -> list[Rule]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    extra = set(data) - {"rule", "pypto"}
    if extra:
        raise ValueError(f"{path}: unknown top-level keys {sorted(extra)}")
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list) or not raw_rules:
        raise ValueError(f"{path}: no [[rule]] tables")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_rules, start=1):
        name = raw.get("id") if isinstance(raw.get("id"), str) else f"#{index}"
        try:
            rule = _build(raw)
        except ValueError as exc:
            raise ValueError(f"{path}: rule {name!r}: {exc}") from None
        if rule.id in seen:
            raise ValueError(f"{path}: rule {rule.id!r}: duplicate id")
        seen.add(rule.id)
        rules.append(rule)
    return rules


@functools.lru_cache(maxsize=1)
def supported_pypto() -> tuple[str, ...]:
    """The pypto versions the packaged rules were checked against (the file's top-level `pypto`)."""
    data = tomllib.loads(RULES_PATH.read_text(encoding="utf-8"))
    versions = data.get("pypto", [])
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise ValueError(f"{RULES_PATH}: pypto must be a list of version strings")
    return tuple(versions)


def version_note(pypto_version: str | None) -> str:
    """"" when the rules were checked on this pypto, else a note saying they were not."""
    supported = supported_pypto()
    if not pypto_version or pypto_version in supported:
        return ""
    return (f"diagnosis rules were checked against pypto {', '.join(supported)}, not {pypto_version}: "
            "this one may not apply")


def _build(raw: dict[str, Any]) -> Rule:
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise ValueError(f"missing required keys {missing}")
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise ValueError(f"unknown keys {unknown}")
    rule_id = raw["id"]
    if not isinstance(rule_id, str) or not _KEBAB.fullmatch(rule_id):
        raise ValueError("id must be kebab-case (a-z, 0-9, '-')")
    for key in ("title", "cause", "fix"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise ValueError(f"{key} must be a non-empty string")
    for key in ("sim_only", "noise", "fallback"):
        if not isinstance(raw.get(key, False), bool):
            raise ValueError(f"{key} must be true or false")
    if not isinstance(raw["priority"], int) or isinstance(raw["priority"], bool):
        raise ValueError("priority must be an integer")
    noise = raw.get("noise", False)
    if noise != rule_id.startswith(NOISE_PREFIX):
        raise ValueError(f"noise rules, and only they, have ids starting with {NOISE_PREFIX!r}")
    if noise and raw.get("fallback", False):
        raise ValueError("a rule cannot be both noise and fallback")
    return Rule(
        id=rule_id,
        title=raw["title"],
        match=_compile(raw["match"]),
        cause=raw["cause"].strip(),
        fix=raw["fix"].strip(),
        sim_only=raw["sim_only"],
        priority=raw["priority"],
        sources=_choice(raw, "sources", SOURCES, SOURCES),
        stages=_choice(raw, "stages", STAGES, ()),
        modes=_choice(raw, "modes", MODES, MODES),
        noise=noise,
        fallback=raw.get("fallback", False),
    )


def _compile(patterns: Any) -> tuple[re.Pattern[str], ...]:
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise ValueError("match must be a non-empty list of non-empty regex strings")
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern, re.IGNORECASE | re.MULTILINE))
        except re.error as exc:
            raise ValueError(f"bad regex {pattern!r}: {exc}") from None
    return tuple(compiled)


def _choice(raw: dict[str, Any], key: str, allowed: tuple[str, ...], default: tuple[str, ...]) -> tuple[str, ...]:
    if key not in raw:
        return default
    values = raw[key]
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key} must be a non-empty list of strings")
    bad = sorted(set(values) - set(allowed))
    if bad:
        raise ValueError(f"{key} has unknown values {bad} (allowed: {list(allowed)})")
    return tuple(v for v in allowed if v in values)


def diagnose(
    *,
    stage: str,
    mode: str,
    exception: str = "",
    stdout: str = "",
    stderr: str = "",
    plog: str = "",
    exit_info: str = "",
    rules: list[Rule] | None = None,
    pypto_version: str | None = None,
) -> list[Diagnosis]:
    """Return the diagnoses whose rules match the texts of one failed case, best first.

    `stage` is where the case failed, `mode` is sim or npu, `exit_info` the harness's account of
    how the process ended ("signal 11 (SIGSEGV)", "exit code 1", "timeout after 60 s", "oom ...").
    Specific rules come first (priority, then specificity); fallback rules only appear when no
    specific rule matched; noise rules (ids "noise-...") always come last and never explain a
    failure on their own. With `pypto_version` outside the rules' checked versions, each diagnosis
    carries a note saying so (`pypto_note`).
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r} (expected one of {list(STAGES)})")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (expected one of {list(MODES)})")
    texts = {
        name: _ANSI.sub("", text or "")
        for name, text in (
            ("exception", exception), ("stderr", stderr), ("plog", plog), ("stdout", stdout), ("exit", exit_info),
        )
    }
    hits: list[tuple[Rule, str, str]] = []
    for rule in load_rules() if rules is None else rules:
        if (rule.stages and stage not in rule.stages) or mode not in rule.modes:
            continue
        found = _match(rule, texts)
        if found is not None:
            hits.append((rule, *found))
    specific = [h for h in hits if not h[0].noise and not h[0].fallback]
    # An exit-code fallback explains an exit "without a recognised error": a Python exception is one.
    fallback = [h for h in hits if h[0].fallback and not (h[1] == "exit" and texts["exception"].strip())]
    chosen = specific or fallback
    chosen = sorted(chosen, key=_rank) + sorted((h for h in hits if h[0].noise), key=_rank)
    file, line = _locate(texts)
    note = version_note(pypto_version)
    return [
        Diagnosis(
            rule=rule.id,
            cause=rule.cause,
            fix=rule.fix,
            sim_only=rule.sim_only,
            stage=stage,
            evidence=evidence,
            origin=origin,
            file="" if rule.noise else file,
            line=0 if rule.noise else line,
            pypto_note=note,
        )
        for rule, origin, evidence in chosen
    ]


def _rank(hit: tuple[Rule, str, str]) -> tuple[int, int, str]:
    rule = hit[0]
    return (-rule.priority, -rule.specificity, rule.id)


def _match(rule: Rule, texts: dict[str, str]) -> tuple[str, str] | None:
    """(origin, evidence line) when every regex matches one of the rule's sources, else None."""
    first: tuple[str, str] | None = None
    for pattern in rule.match:
        for source in rule.sources:
            if pattern.search(texts[source]):
                if first is None:
                    first = (source, _evidence(pattern, texts[source]))
                break
        else:
            return None
    return first


def _evidence(pattern: re.Pattern[str], text: str) -> str:
    """The first line the pattern matches, skipping source lines that a traceback echoes
    (`raise ValueError("Not concrete value")` is pypto's code, not the error)."""
    lines = [_line_at(text, found.start()) for found in pattern.finditer(text)]
    for start, line in lines:
        previous = text[text.rfind("\n", 0, max(start - 1, 0)) + 1 : start]
        if not _TRACEBACK_FRAME.match(previous):
            return _trim(line)
    return _trim(lines[0][1])


def _line_at(text: str, pos: int) -> tuple[int, str]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, text[start:] if end < 0 else text[start:end]


def _trim(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= EVIDENCE_CHARS else line[: EVIDENCE_CHARS - 3] + "..."


def _locate(texts: dict[str, str]) -> tuple[str, int]:
    """The user's file and line: pypto's `ERROR file:line:col` diagnostic, else the deepest
    traceback frame outside site-packages, the standard library and this runtime."""
    for name in ("stdout", "stderr", "exception"):
        for found in _PYPTO_LOCATION.finditer(texts.get(name, "")):
            if is_user_file(found["file"]):
                return found["file"], int(found["line"])
    for name in ("exception", "stderr"):
        frames = [f for f in _TRACEBACK_FRAME.finditer(texts.get(name, "")) if is_user_file(f["file"])]
        if frames:
            return frames[-1]["file"], int(frames[-1]["line"])
    return "", 0


def is_user_file(path: str) -> bool:
    """Whether a traceback path is the submission's (not an installed package, the stdlib or this runtime)."""
    return not _NOT_USER.search(path) and not path.startswith(_RUNTIME_DIR)
