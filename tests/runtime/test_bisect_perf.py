"""`crosscheck bisect --metric aicore_us` on a real git repository built here, through the real runtime
(real pypto SIM and its cost model): docs/bisect.md §5."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runtime.bisect_history import commit, git, new_repo, operator_files
from tests.runtime.test_bisect import CASE, IMPL, bisect

pytestmark = pytest.mark.slow  # real pypto compiles, a few per test

TILES, SMALLER = "set_vec_tile_shapes(32, 64)", "set_vec_tile_shapes(16, 32)"


def smaller_tiles() -> dict[str, str]:
    files = operator_files()
    assert TILES in files[IMPL]
    return {**files, IMPL: files[IMPL].replace(TILES, SMALLER)}


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """c1 adds scale_add (32 x 64 tiles), c2 touches only the README, c3 halves the tiles both ways (four
    times the tasks on the 32 x 64 case: a slower estimate, still right), c4 touches only the README."""
    repo = new_repo(tmp_path_factory.mktemp("four") / "repo")
    shas = [commit(repo, "add scale_add", {**operator_files(), "README.md": "ops\n"}),
            commit(repo, "readme: a word", {"README.md": "ops and more\n"}),
            commit(repo, "scale_add: smaller tiles", smaller_tiles()),
            commit(repo, "readme: another word", {"README.md": "ops and more still\n"})]
    return repo, shas


def test_the_commit_that_makes_the_estimate_rise_is_found(four, calculator_cache, tmp_path):
    repo, shas = four
    out = tmp_path / "perf.json"
    proc = bisect(repo, calculator_cache, "--good", shas[0], "--bad", "main", "--metric", "aicore_us",
                  "--threshold", "10%", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert f"first bad commit: {shas[2]} scale_add: smaller tiles" in lines
    steps = [line for line in lines if line.startswith("[")]
    assert steps[0].startswith(f"[good] {shas[0][:10]} run     within 10%")
    assert steps[1].startswith(f"[bad] {shas[3][:10]} run     slower: {CASE}")
    data = json.loads(out.read_text())
    assert data["first_bad_commit"] == shas[2] and data["last_good"] == shas[1]
    assert data["metric"] == "aicore_us" and data["threshold"] == pytest.approx(0.10)
    [row] = data["changed_cases"]
    # measured, not planted: the smaller tiles' estimate is higher (docs/bisect.md §5)
    assert row["case"] == CASE and row["after_us"] > 1.1 * row["before_us"]
    assert data["before"]["cases"][CASE]["aicore_us"] == row["before_us"]
    assert data["changed_files"] == [IMPL]
    assert data["runs_in_search"] == 0  # c2 reuses c1's run, c3 reuses c4's: the contents are the same
    assert any(line.startswith(f"  {CASE}: ") and "AICore µs (+" in line for line in lines)


def test_a_bad_revision_that_is_not_slower_is_named(four, calculator_cache):
    repo, shas = four
    proc = bisect(repo, calculator_cache, "--good", shas[2], "--bad", shas[3], "--metric", "aicore_us")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--bad {shas[3]} is not 10% slower than --good as the bisect needs: within 10%" in proc.stderr


def test_unusable_metric_input_is_refused(four, calculator_cache):
    repo, shas = four
    proc = bisect(repo, calculator_cache, "--good", shas[0], "--bad", shas[3], "--metric", "aicore_us",
                  "--mode", "npu")
    assert proc.returncode == 2 and "--metric aicore_us needs --mode sim" in proc.stderr
    proc = bisect(repo, calculator_cache, "--good", shas[0], "--bad", shas[3], "--metric", "aicore_us",
                  "--threshold=0%")
    assert proc.returncode == 2 and "the threshold must be above 0%" in proc.stderr
    assert git(repo, "worktree", "list").count("\n") == 0
