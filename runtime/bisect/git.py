"""The git side of a bisect: revisions, the range between them, and a temporary worktree (docs/bisect.md §2).

The user's working tree is never touched: every revision is checked out in a worktree of our own
under a temp dir, removed (and pruned from the repository's worktree list) on every way out.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from runtime.errors import SubmissionError


class GitError(SubmissionError):
    """The checkout or a revision cannot be used (exit 2)."""


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if shutil.which("git") is None:
        raise GitError("git is not installed on this host (crosscheck bisect needs it)")
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {result.stderr.strip() or 'failed'}")
    return result


def top_level(checkout: Path) -> Path:
    """The repository's top folder; `checkout` must be inside a git work tree."""
    if not Path(checkout).is_dir():
        raise GitError(f"{checkout}: not a folder (give a git checkout)")
    result = _git(Path(checkout), "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        why = (result.stderr.strip().splitlines() or ["no .git found"])[-1]
        raise GitError(f"{checkout}: not a git checkout ({why})")
    return Path(result.stdout.strip())


def resolve(repo: Path, rev: str, flag: str) -> str:
    """The full sha of `rev`, or an error naming the flag that gave it."""
    result = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if result.returncode != 0 or not result.stdout.strip():
        raise GitError(f"{flag} {rev}: no such commit in {repo}")
    return result.stdout.strip()


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return _git(repo, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def between(repo: Path, good: str, bad: str) -> list[str]:
    """good, then every commit after it up to bad, oldest first, along bad's first-parent line
    (a merge brings its branch in one step: docs/bisect.md §2)."""
    out = _git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good}..{bad}").stdout
    return [good] + out.split()


def subject(repo: Path, sha: str) -> str:
    return _git(repo, "log", "-1", "--format=%s", sha).stdout.strip()


def changed_files(repo: Path, sha: str) -> list[str]:
    """The files `sha` changed against its first parent (all of them for a root commit)."""
    out = _git(repo, "diff-tree", "--no-commit-id", "-r", "--name-only", "--root", "-m", "--first-parent", sha).stdout
    return sorted(set(out.split("\n")) - {""})


class Worktree:
    """A detached worktree of `repo`; `checkout(sha)` moves it (and only it) to a revision."""

    def __init__(self, repo: Path, path: Path) -> None:
        self.repo, self.path = repo, path

    def checkout(self, sha: str) -> Path:
        _git(self.path, "checkout", "--quiet", "--force", "--detach", sha)
        _git(self.path, "clean", "--quiet", "-d", "--force", "-x")
        return self.path


@contextmanager
def worktree(repo: Path, first: str) -> Iterator[Worktree]:
    holder = Path(tempfile.mkdtemp(prefix="crosscheck-bisect-"))
    path = holder / "tree"
    try:
        _git(repo, "worktree", "add", "--quiet", "--detach", str(path), first)
        yield Worktree(repo, path)
    finally:
        _git(repo, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(holder, ignore_errors=True)
        _git(repo, "worktree", "prune", check=False)
