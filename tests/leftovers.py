"""The test run leaves nothing in the temp dir: every process of the run (pytest, its xdist workers, the
services, workers and warm parents the tests start) makes its temp dirs in one fresh dir, and the run
fails when a `crosscheck-*` dir is still there at the end (a job dir of a killed worker, say).

Hooked in by tests/conftest.py. Under pytest-xdist the controller makes the dir before the workers
start (they inherit TMPDIR) and checks it after they finished; a worker does nothing itself.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from runtime.fence.scratch import OWNER_MARK, remove_if_dead

RUN_DIR_PREFIX = "tests-run-"  # not crosscheck-*: the check looks inside it
LEFTOVER_PREFIX = "crosscheck-"
_RUN_DIR = pytest.StashKey[Path]()


def remove_dirs_of(killed: set[int], root: Path | None = None) -> None:
    """What the next worker's start-up sweep would do (runtime/fence/scratch.py), for the dirs of processes a
    test SIGKILLed only: a dir a process left after a normal stop still fails the run."""
    for path in Path(root or tempfile.gettempdir()).glob(LEFTOVER_PREFIX + "*"):
        try:
            owner = int((path / OWNER_MARK).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if owner in killed:
            remove_if_dead(path)


def start(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller's TMPDIR is already ours
        return
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())  # tmp_path stays where it was
    run_dir = Path(tempfile.mkdtemp(prefix=RUN_DIR_PREFIX))
    run_dir.chmod(0o1777)  # like /tmp: jobs' uids and the postgres user make dirs here too
    os.environ["TMPDIR"] = str(run_dir)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    config.stash[_RUN_DIR] = run_dir


def finish(session: pytest.Session) -> None:
    run_dir = session.config.stash.get(_RUN_DIR, None)
    if run_dir is None:
        return
    left = sorted(p.name for p in run_dir.iterdir() if p.name.startswith(LEFTOVER_PREFIX))
    shutil.rmtree(run_dir, ignore_errors=True)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (f"the test run left {len(left)} crosscheck dir(s) in its temp dir (runtime/fence/scratch.py): "
               + ", ".join(left[:10]) + (" ..." if len(left) > 10 else ""))
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", message, red=True)
    else:  # pragma: no cover - without the terminal reporter (-p no:terminal)
        print(message)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
