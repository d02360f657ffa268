"""Shared fixtures: the graph-verify calculator cache and a warm parent for SIM jobs."""
from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from tests import leftovers

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# A `crosscheck run` a test starts keeps no run daemon alive behind it unless the test asks for one
# (docs/run-daemon.md); tests/runtime/test_run_daemon.py runs without this setting.
os.environ.setdefault("CROSSCHECK_NO_DAEMON", "1")
# The workers tests start run their kernels at the tests' own priority: the pytest processes share one scheduling
# group with them, where JOB_NICE would only slow the tests (docs/platform.md §5); test_job_nice.py checks it.
os.environ.setdefault("JOB_NICE", "0")


def pytest_configure(config: pytest.Config) -> None:
    leftovers.start(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    leftovers.finish(session)


def missing_service(reason: str, module_level: bool = False) -> NoReturn:
    """Skip a test whose service (PostgreSQL, Chromium, ...) is missing on a developer's machine.
    Under CI=true nothing may skip for a missing service: it fails, naming what is missing."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: a missing service fails the run)", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


@pytest.fixture(autouse=True)
def _process_state_is_restored():
    """A test must put back the process-wide state it changes: later tests (and the warm parents they
    start) would otherwise run under it. A umask of 077 once lost a job's logs
    (tests/runtime/test_worker_umask.py); a SIGTERM handler left by an in-process `crosscheck run`
    turned a stray SIGTERM into a SystemExit inside an unrelated test."""
    import signal

    before = os.umask(0o022)
    os.umask(before)
    handler = signal.getsignal(signal.SIGTERM)
    yield
    after = os.umask(before)
    assert after == before, f"this test left the process umask at {after:03o} (it was {before:03o})"
    left = signal.getsignal(signal.SIGTERM)
    if left is not handler:
        signal.signal(signal.SIGTERM, handler)
        pytest.fail(f"this test left a SIGTERM handler behind: {left!r}")


@pytest.fixture(scope="session")
def calculator_cache() -> Path:
    """The calculator, built once per machine (about a minute) into the user cache."""
    from runtime.evidence import calculator
    from runtime.evidence.calculator import default_cache_dir

    cache = Path(os.environ.get("CROSSCHECK_CACHE_DIR") or default_cache_dir())
    ready, _ = calculator.status(cache)
    if not ready:
        calculator.build(cache)
    ready, why = calculator.status(cache)
    assert ready, f"the graph-verify calculator did not build: {why}"  # tests expect graph verify to run
    return cache


@pytest.fixture(scope="session")
def warm_sim():
    from runtime.warm import WarmParent

    with WarmParent("sim") as warm:
        yield warm
