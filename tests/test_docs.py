"""References into docs/ resolve, no reference leaves the repository, and the repro scripts compile."""
from __future__ import annotations

import py_compile
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".pytest_cache", "build", "dist"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".html", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".sh", ".j2"}
TEXT_NAMES = {"Dockerfile", "run", ".importlinter"}
DOC_REF = re.compile(r"docs/([A-Za-z0-9_.-]+\.md)(?:\s*§\s*(\d+))?")
REPRO_REF = re.compile(r"docs/repro/([A-Za-z0-9_]+\.py)")
# Where knowledge used to live before it was written into docs/; nothing may point there any more.
OUTSIDE = re.compile(r"pypto-notes|platform[- ]notes|/work/shared|\.\./shared|notes section|notes §", re.I)


def repo_texts() -> list[Path]:
    found = []
    for path in REPO.rglob("*"):
        if any(part in SKIP_DIRS for part in path.relative_to(REPO).parts) or not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES:
            found.append(path)
    return found


TEXTS = {path: path.read_text(errors="replace") for path in repo_texts()}


def section_numbers(doc: Path) -> set[str]:
    """Numbers of the headings that start with one: `## 3. Title` or `## §3 Title`."""
    return set(re.findall(r"^#+\s*§?\s*(\d+)[.\s]", doc.read_text(), re.M))


def references() -> list[tuple[str, str, str | None]]:
    return [(str(path.relative_to(REPO)), m.group(1), m.group(2))
            for path, text in TEXTS.items() for m in DOC_REF.finditer(text)]


def test_the_scan_sees_the_known_citations():
    """Guards the scan itself: if it found nothing, every other check here would pass vacuously."""
    cited = {(where, doc) for where, doc, _ in references()}
    assert ("runtime/evidence/graph_verify.py", "pypto.md") in cited
    assert ("runtime/intake/dtypes.py", "pypto.md") in cited


def test_every_cited_doc_and_section_exists():
    problems = []
    for where, doc, section in references():
        path = DOCS / doc
        if not path.is_file():
            problems.append(f"{where}: docs/{doc} does not exist")
        elif section is not None and section not in section_numbers(path):
            problems.append(f"{where}: docs/{doc} has no section {section}")
    assert not problems, "\n".join(problems)


def test_pypto_doc_keeps_the_numbered_sections_code_cites():
    assert section_numbers(DOCS / "pypto.md") >= {str(n) for n in range(1, 9)}


def test_no_reference_points_outside_the_repository():
    here = Path(__file__).resolve()
    hits = [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for path, text in TEXTS.items() if path != here for m in OUTSIDE.finditer(text)]
    assert not hits, "\n".join(hits)


def test_every_repro_script_named_in_docs_exists_and_every_script_is_named():
    named = {m.group(1) for path, text in TEXTS.items() if path.is_relative_to(DOCS) and path.suffix == ".md"
             for m in REPRO_REF.finditer(text)}
    scripts = {p.name for p in (DOCS / "repro").glob("*.py")}
    helpers = {"common.py"}
    assert named - scripts == set(), f"named in docs but missing: {sorted(named - scripts)}"
    assert scripts - named - helpers == set(), f"scripts no document names: {sorted(scripts - named - helpers)}"


@pytest.mark.parametrize("script", sorted((DOCS / "repro").glob("*.py")), ids=lambda p: p.name)
def test_repro_script_compiles(script: Path, tmp_path: Path):
    py_compile.compile(str(script), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_ci_runs_exactly_the_readme_test_command():
    """.ci/run calls the README's test command (coverage included), word for word."""
    found = re.search(r"```bash\n(pip install -q -c constraints\.txt -e '\.\[test\]' && [^\n]+)\n```",
                      (REPO / "README.md").read_text())
    assert found, "README.md has no test command (installing from the lock, constraints.txt)"
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert any(line == found.group(1) or line.startswith(found.group(1) + " || ") for line in lines)
    assert "--cov" in found.group(1)


def test_the_readme_names_every_verdict():
    """Each per-case verdict has a row in the README's table, and each combined verdict is named."""
    from runtime import verdicts
    from server.services import combined

    readme = (REPO / "README.md").read_text()
    table = readme.split("## Verdicts per case", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))
    assert rows == set(verdicts.VERDICTS), set(verdicts.VERDICTS) ^ rows
    section = readme.split("## Combined verdict per operator case", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in combined.COMBINED if f"`{name}`" not in section]
    assert not missing, missing


# A repository path cited in prose: `runtime/x.py`, `tests/y.py::test_z`, `web/templates/`, globs.
REPO_PATH = re.compile(r"(?<![\w/.~-])((?:runtime|server|web|worker|tests|bench|examples|jobqueue|migrations|docs)"
                       r"/[\w./*-]*[\w*/])(?:::(\w+))?")
# Paths in other repositories' layouts the docs describe: a pypto-gym checkout, a user's own NPU
# suite in a CI example, hicann/pypto's examples.
NOT_OURS = ("tests/ops/", "tests/npu", "examples/01_beginner/")


def cited_paths() -> list[tuple[str, str, str | None]]:
    """(where, path, test or None) for every repository path cited in docs/*.md and README.md."""
    docs = [*sorted(DOCS.glob("*.md")), REPO / "README.md"]
    return [(f"{doc.relative_to(REPO)}:{n}", m.group(1), m.group(2))
            for doc in docs for n, line in enumerate(doc.read_text().splitlines(), 1)
            for m in REPO_PATH.finditer(line) if not m.group(1).startswith(NOT_OURS)]


def test_the_path_scan_sees_the_known_citations():
    cited = {path for _, path, _ in cited_paths()}
    assert {"runtime/job/child.py", "server/services/jobs.py", "tests/hostile/unfixed_sandbox.py"} <= cited


def test_every_repository_path_cited_in_the_docs_exists():
    problems = []
    for where, path, test in cited_paths():
        if not (any(REPO.glob(path)) if "*" in path else (REPO / path).exists()):
            problems.append(f"{where}: {path} does not exist")
        elif test and not re.search(rf"^\s*(async )?def {test}\b", (REPO / path).read_text(), re.M):
            problems.append(f"{where}: {path} has no {test}")
    assert not problems, "\n".join(problems)
