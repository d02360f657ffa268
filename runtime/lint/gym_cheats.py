"""The gym's mechanical cheat check of an operator's sources, in its report's fields (docs/kernelbench.md §3).

`check(files, op)` -> {"verdict": pass|suspicious|cheat, "checks": [...], "summary"}: the sources present and
parsing, `import pypto`, a jit kernel, and suspicious text (S9), each check named as the gym names it.
Text alone never makes a cheat: a correct operator with a suspicious comment stays acceptable, with a warning.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from runtime.intake import python_ast

SUSPICIOUS_TEXT = [re.compile(p, re.IGNORECASE) for p in (
    r"for\s+testing\s+only", r"TODO\s*[:\-]?\s*use\s+pypto", r"fallback\s+to\s+torch", r"workaround",
    r"bypass\s+pypto", r"demo\s+only")]


def _check(name: str, status: str, level: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "status": status, "level": level, "detail": detail, "extra": extra}


def _imports_pypto(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name.split(".")[0] == "pypto" for a in n.names)
               or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "pypto" for n in ast.walk(tree))


def _has_jit(tree: ast.Module) -> bool:
    def is_jit(node: ast.AST) -> bool:
        node = node.func if isinstance(node, ast.Call) else node
        return (isinstance(node, ast.Attribute) and node.attr == "jit") or (isinstance(node, ast.Name) and node.id == "jit")
    return any(is_jit(d) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               for d in n.decorator_list) or any(isinstance(n, ast.Call) and is_jit(n.func) for n in ast.walk(tree))


def suspicious_lines(text: str) -> list[tuple[int, str]]:
    """(line, the matched text) of every suspicious phrase (S9)."""
    return [(i, m.group(0)) for i, line in enumerate(text.splitlines(), 1) for p in SUSPICIOUS_TEXT
            for m in [p.search(line)] if m]


def check(sources: list[Path], op: str) -> dict[str, Any]:
    checks = []
    if not sources:
        checks.append(_check("sources_present", "fail", "fatal", f"no {op}_impl.py or {op}_pypto_impl.py"))
    else:
        checks.append(_check("sources_present", "pass", "info", f"scanning {', '.join(p.name for p in sources)}"))
    imports = jit = False
    hits: list[str] = []
    for path in sources:
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{path.name}:{line}: {found}" for line, found in suspicious_lines(text)]
        try:
            tree = python_ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            checks.append(_check(f"parse:{path.name}", "fail", "fatal", f"line {exc.lineno}: {exc.msg}"))
            continue
        imports, jit = imports or _imports_pypto(tree), jit or _has_jit(tree)
    checks.append(_check("import_pypto", "pass" if imports else "fail", "info" if imports else "fatal",
                         "imports pypto" if imports else "no `import pypto`: the operator is not PyPTO"))
    checks.append(_check("has_jit", "pass" if jit else "fail", "info" if jit else "fatal",
                         "a jit kernel is defined" if jit else "no @pypto.frontend.jit kernel"))
    checks.append(_check("forbidden_text_patterns", "warn" if hits else "pass", "warn" if hits else "info",
                         f"suspicious text: {'; '.join(hits)}" if hits else "no suspicious text", hits=hits))
    fatal = [c["name"] for c in checks if c["status"] == "fail"]
    verdict = "cheat" if fatal else "suspicious" if hits else "pass"
    summary = {"cheat": f"CHEAT: {', '.join(fatal)}", "suspicious": "SUSPICIOUS: forbidden_text_patterns",
               "pass": "PASS: no mechanical sign of a cheat"}[verdict]
    return {"op_name": op, "verdict": verdict, "checks": checks, "summary": summary}
