"""docs/ci.md's pipelines: both parse, and every crosscheck command in them parses with our CLI."""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from server.cli import build_parser

DOC = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
CI_VARIABLE = re.compile(r"\$\{\{[^}]*\}\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([^)]*\)")


def pipelines() -> dict[str, Any]:
    """The YAML blocks under the GitHub Actions and GitLab CI headings."""
    text = DOC.read_text()
    out = {}
    for heading in ("GitHub Actions", "GitLab CI"):
        section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
        (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
        out[heading] = yaml.safe_load(block)
    return out


def shell_lines(value: Any) -> list[str]:
    """Every shell command in a GitHub `run:` or GitLab `script:` (folded blocks are one line)."""
    lines = value if isinstance(value, list) else [value]
    out = []
    for item in lines:
        for line in str(item).replace("\\\n", " ").splitlines():
            out += [part.strip() for part in re.split(r"\|\||&&|;", line) if part.strip()]
    return out


def commands(pipeline: Any) -> list[str]:
    found: list[str] = []

    def walk(node: Any, key: str = "") -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list) and key != "script":
            for item in node:
                walk(item, key)
        if key in ("run", "script"):
            found.extend(shell_lines(node))

    walk(pipeline)
    return [c for c in found if c.startswith("crosscheck ")]


@pytest.mark.parametrize("heading", ["GitHub Actions", "GitLab CI"])
def test_the_pipeline_uses_only_options_that_exist(heading):
    found = commands(pipelines()[heading])
    assert any(c.startswith("crosscheck ci run") for c in found), found
    assert any(c.startswith("crosscheck upload") for c in found), found
    for command in found:
        argv = shlex.split(CI_VARIABLE.sub("X", command))[1:]
        argv = [a if "*" not in a else "reports/a.json" for a in argv]  # a shell glob
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"{heading}: `{command}` does not parse (exit {exc.code})")


def test_a_wrong_option_would_be_caught(capsys):
    with pytest.raises(SystemExit):
        build_parser(["ci"]).parse_args(["ci", "run", ".", "--suite", "s", "--fail-on-regression"])
    assert "unrecognized arguments" in capsys.readouterr().err


def test_github_runs_on_a_schedule_and_gitlab_keeps_the_junit_report():
    p = pipelines()
    github = p["GitHub Actions"]
    assert github.get("on", github.get(True))["schedule"]  # YAML 1.1 reads a bare `on` as true
    assert p["GitLab CI"]["crosscheck-sim"]["artifacts"]["reports"]["junit"] == "crosscheck.xml"
