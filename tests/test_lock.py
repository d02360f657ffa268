"""constraints.txt, the lock: it pins everything pyproject.toml asks for, and what that pulls in.

docs/dependencies.md §1 says what the lock is for, §2 how to refresh it.
"""
from __future__ import annotations

import importlib.metadata as md
import os
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent


def locked() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"constraints.txt: {line!r} is not a `name==version` pin"
        pins[canonicalize_name(name)] = version
    return pins


def ours() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]


def test_every_requirement_of_ours_is_pinned_within_its_range():
    pins = locked()
    for req in ours():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is in pyproject.toml but not in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject.toml's {req.specifier}"


def test_torch_is_the_local_cpu_build_of_2_13_0():
    # Any other pin makes pip download a CUDA build of several GB (docs/dependencies.md §1).
    assert locked()["torch"] == "2.13.0+cpu"
    assert any(str(r) == "torch==2.13.0" for r in ours())


def closure() -> tuple[dict[str, str], list[str]]:
    """Every installed distribution our requirements reach (markers and extras evaluated), with the
    requirements that no installed distribution answers."""
    reached: dict[str, str] = {}
    missing: list[str] = []
    todo = [(req, "pyproject.toml") for req in ours()]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req, wanted_by = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            missing.append(f"{req} (wanted by {wanted_by})")
            continue
        reached[key[0]] = dist.version
        for text in dist.requires or []:
            dep = Requirement(text)
            extras = req.extras or {""}
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras):
                todo.append((dep, req.name))
    return reached, missing


def test_whatever_our_requirements_pull_in_is_locked_too():
    reached, _ = closure()
    unlocked = sorted(set(reached) - set(locked()) - {"pto-crosscheck"})
    assert not unlocked, f"installed for our requirements but not in constraints.txt: {unlocked}"


def test_ci_installed_exactly_the_lock():
    """.ci/run installs with the README's command: every package it reached is at its locked version."""
    if os.environ.get("CI", "").lower() != "true":
        pytest.skip("only where the README's command installed the packages (CI=true)")
    reached, missing = closure()
    pins = locked()
    assert not missing, f"required but not installed: {missing}"
    drift = {name: (version, pins.get(name)) for name, version in reached.items()
             if name != "pto-crosscheck" and version != pins.get(name)}
    assert not drift, f"installed version differs from constraints.txt (installed, locked): {drift}"
