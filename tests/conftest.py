"""Shared fixtures: the graph-verify calculator cache and a warm parent for SIM jobs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def calculator_cache() -> Path:
    """The calculator, built once per machine (about a minute) into the user cache."""
    from runtime import calculator
    from runtime.calculator import default_cache_dir

    cache = Path(os.environ.get("CROSSCHECK_CACHE_DIR") or default_cache_dir())
    ready, _ = calculator.status(cache)
    if not ready:
        calculator.build(cache)
    return cache


@pytest.fixture(scope="session")
def warm_sim():
    from runtime.warm import WarmParent

    with WarmParent("sim") as warm:
        yield warm
