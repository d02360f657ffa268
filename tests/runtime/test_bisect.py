"""`crosscheck bisect` on real git repositories built here, through the real runtime (real pypto SIM with
graph verify): docs/bisect.md."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.bisect_history import OP_DIR, WRONG, commit, git, new_repo, operator_files

pytestmark = pytest.mark.slow  # real pypto compiles, a few per test

REPO = Path(__file__).resolve().parents[2]
CASE = "scale_add_32x64"
IMPL = f"{OP_DIR}/scale_add_impl.py"


def bisect(checkout: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", "bisect", str(checkout), "--op", "scale_add",
                           "--case", CASE, "--cache-dir", str(cache), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """c1 adds scale_add, c2 touches only the README, c3 breaks the kernel, c4 changes a comment in it
    (still broken), c5 touches only the README."""
    repo = new_repo(tmp_path_factory.mktemp("five") / "repo")
    shas = [commit(repo, "add scale_add", {**operator_files(), "README.md": "ops\n"}),
            commit(repo, "readme: a word", {"README.md": "ops and more\n"}),
            commit(repo, "scale_add: a faster scale", operator_files(WRONG)),
            commit(repo, "scale_add: a comment", operator_files(WRONG, note="# tiles of 32 x 64\n")),
            commit(repo, "readme: another word", {"README.md": "ops and more still\n"})]
    (repo / "scratch.txt").write_text("the user's own uncommitted work\n")
    return repo, shas


def test_the_kernel_that_turns_wrong_in_the_third_of_five_commits(five, calculator_cache, tmp_path):
    repo, shas = five
    before = git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD")
    out = tmp_path / "bisect.json"
    proc = bisect(repo, calculator_cache, "--good", shas[0], "--bad", "main", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert f"first bad commit: {shas[2]} scale_add: a faster scale" in lines
    steps = [line for line in lines if line.startswith("[")]
    # good and bad run; c3 has new content (runs); c2's operator is c1's byte for byte (reused)
    assert steps[0].startswith(f"[good] {shas[0][:10]} run     acceptable")
    assert steps[1].startswith(f"[bad] {shas[4][:10]} run     kernel defect")
    assert steps[2].startswith(f"[1] {shas[2][:10]} run     kernel defect")
    assert steps[3].startswith(f"[2] {shas[1][:10]} reused  acceptable")
    assert len(steps) == 4, steps
    assert any(line.startswith(f"  {CASE}: sim_garbage_graph_ok") and "graph_fail" in line for line in lines), lines
    assert lines[-1] == f"  {IMPL}" and "operator files the commit changed:" in lines
    data = json.loads(out.read_text())
    assert data["first_bad_commit"] == shas[2] and data["last_good"] == shas[1]
    assert (data["good"], data["bad"]) == (shas[0], shas[4])
    assert [(s["sha"], s["how"]) for s in data["premises"]] == [(shas[0], "run"), (shas[4], "run")]
    assert data["changed_files"] == [IMPL] and [c["case"] for c in data["changed_cases"]] == [CASE]
    assert data["before"]["cases"][CASE]["verdict"] == "sim_garbage_graph_ok"
    assert data["after"]["cases"][CASE]["graph_max_abs_diff"] > 1e-3
    assert data["runs_in_search"] == 1  # c3; c2 reused
    assert [(s["sha"], s["how"], s["reused_from"]) for s in data["steps"]] == [
        (shas[2], "run", None), (shas[1], "reused", shas[0])]
    # the user's working tree, branch and worktree list are as they were
    assert (git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD")) == before
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_premise_that_does_not_hold_is_named(five, calculator_cache):
    repo, shas = five
    proc = bisect(repo, calculator_cache, "--good", shas[2], "--bad", shas[4])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--good {shas[2]} is not acceptable as the bisect needs: kernel defect" in proc.stderr
    proc = bisect(repo, calculator_cache, "--good", shas[4], "--bad", shas[0])
    assert proc.returncode == 2 and "is not an ancestor of --bad" in proc.stderr
    proc = bisect(repo, calculator_cache, "--good", "no-such-rev", "--bad", shas[0])
    assert proc.returncode == 2 and "--good no-such-rev: no such commit" in proc.stderr
    proc = bisect(repo.parent, calculator_cache, "--good", shas[0], "--bad", shas[4])
    assert proc.returncode == 2 and "not a git checkout" in proc.stderr
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_revision_without_the_operator_is_skipped_and_said_so(calculator_cache, tmp_path):
    """c3 removes the operator, c4 brings it back unchanged, c5 breaks it."""
    repo = new_repo(tmp_path / "repo")
    shas = [commit(repo, "add scale_add", operator_files()),
            commit(repo, "readme", {"README.md": "ops\n"}),
            commit(repo, "remove scale_add for a while", {OP_DIR: None}),
            commit(repo, "bring scale_add back", operator_files()),
            commit(repo, "scale_add: a faster scale", operator_files(WRONG)),
            commit(repo, "readme again", {"README.md": "ops!\n"})]
    proc = bisect(repo, calculator_cache, "--good", shas[0], "--bad", shas[5])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skip = f"[1] {shas[2][:10]} skipped operator scale_add not found at this revision"
    assert skip in proc.stdout.splitlines(), proc.stdout
    assert f"first bad commit: {shas[4]} scale_add: a faster scale" in proc.stdout


def test_only_skipped_revisions_left_names_the_candidates(calculator_cache, tmp_path):
    """The operator is missing in the only commit between good and bad: it may be that one or bad."""
    repo = new_repo(tmp_path / "repo")
    shas = [commit(repo, "add scale_add", operator_files()),
            commit(repo, "remove scale_add", {OP_DIR: None}),
            commit(repo, "scale_add again, broken", operator_files(WRONG))]
    proc = bisect(repo, calculator_cache, "--good", shas[0], "--bad", shas[2])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "only skipped revisions are left" in proc.stdout
    assert f"  {shas[1]} remove scale_add" in proc.stdout and f"  {shas[2]} scale_add again, broken" in proc.stdout
