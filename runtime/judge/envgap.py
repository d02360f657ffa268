"""A case stopped by this host's Python environment, not by the kernel (docs/realops.md §9).

A test file that imports a third-party package the job's Python lacks (pytest, most often) fails
before any kernel runs. That is the environment's gap: the verdict stays `not_run`, the case's stage
is `environment` (exit 3 with runtime.exit_codes), and the reason names the package and the fix.
"""
from __future__ import annotations

import re
from pathlib import Path

from runtime.report import Diagnosis, ErrorInfo
from runtime.verdicts import ENVIRONMENT_STAGE as STAGE, NOT_RUN, SKIPPED_STAGE
# The packages our own stand-ins or other rules answer for (torch_npu: the stand-in; pypto: version skew).
OURS = ("torch_npu", "pypto")
RULE = "python-package-missing"
FIXTURE_RULE = "fixture-needs-npu"
# What runtime/job/pytest_run.py raises when pytest itself says the item did not run: a fixture that needs an
# NPU (the environment's gap), and an item pytest skipped as it ran (a `skipif` that held, `pytest.skip()`).
FIXTURE_NEEDS_NPU, ITEM_SKIPPED = "FixtureNeedsNpu", "ItemSkipped"
PYTEST_NOT_RUN = (FIXTURE_NEEDS_NPU, ITEM_SKIPPED)
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_package(error: ErrorInfo | None, src_dir: Path, launches: int) -> str | None:
    """The top-level package a ModuleNotFoundError names, when it is neither ours nor in the submission."""
    if error is None or error.type != "ModuleNotFoundError" or launches:
        return None
    found = _NO_MODULE.search(error.message)
    if not found:
        return None
    top = found.group(1).split(".")[0]
    if top in OURS or _in_submission(top, src_dir):
        return None
    return top


def _in_submission(top: str, src_dir: Path) -> bool:
    try:
        return any(p.stem == top for p in src_dir.rglob(f"{top}*") if p.suffix in ("", ".py"))
    except OSError:
        return True  # cannot tell: leave it to the usual verdict


def reason(package: str) -> str:
    return (f"the submission imports the Python package '{package}', which this host's Python lacks, so no kernel "
            f"ran: the environment's gap, not the kernel's (install it where jobs run: pip install {package}; the "
            "worker image carries pytest)")


def pytest_not_run(error: ErrorInfo) -> tuple[str, str, str]:
    """(verdict, reason, stage) of an item pytest did not run to its end for a reason of its own."""
    if error.type == ITEM_SKIPPED:
        return NOT_RUN, f"skipped by pytest as it ran ({error.message}): not run, as pytest would not", SKIPPED_STAGE
    return NOT_RUN, (f"{error.message}; no kernel ran: the environment's gap (no NPU here), not the kernel's"), STAGE


def diagnosis(package: str | None, error: ErrorInfo) -> Diagnosis:
    """The case's diagnosis: the environment's, naming the package (or the fixture) and the fix."""
    if package is None:
        return Diagnosis(
            rule=FIXTURE_RULE, sim_only=True, stage=STAGE, evidence=f"{error.type}: {error.message}"[:300],
            origin="exception", file=error.file, line=error.line,
            cause="A pytest fixture of the test (from a conftest.py of the checkout) asks for something only an NPU "
                  "has, which the SIM stand-in for torch_npu cannot give; the test never started.",
            fix="Run it on an NPU host (`--mode npu`), or give the fixture a path that needs no card in SIM.")
    return Diagnosis(
        rule=RULE, sim_only=False, stage=STAGE, evidence=f"{error.type}: {error.message}"[:300], origin="exception",
        file=error.file, line=error.line,
        cause=f"The submission imports '{package}', a third-party Python package that is not installed where the "
              "job ran and is not part of the submission; the import failed before any kernel ran.",
        fix=f"Install it in the Python the jobs use (`pip install {package}`); the worker image installs the usual "
            "test tools (`pip install '.[job-tools]'`, pytest among them). Nothing is known about the kernel yet.")
