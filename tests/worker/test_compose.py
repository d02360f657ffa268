"""docker-compose.yml and the Dockerfile: checked structurally everywhere, validated by
`docker compose config` where the compose CLI exists, and built where a Docker daemon runs.
Which of these happened shows in the run's summary (-ra): the Docker tests say why they skipped.
Docker is not one of the services the suite needs (README), so its absence skips, also under CI.
"""
from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.conftest import REPO


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return dict(compose["services"])


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    return dict(env) if isinstance(env, dict) else dict(item.split("=", 1) for item in env)


def test_services_exist(services: dict[str, Any]) -> None:
    assert {"postgres", "redis", "migrate", "api", "worker-sim", "worker-npu"} <= set(services)


def test_api_waits_for_the_migration(services: dict[str, Any]) -> None:
    assert services["migrate"]["command"] == ["crosscheck", "db", "upgrade"]
    assert services["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    command = services["api"]["command"]
    assert command[:2] == ["crosscheck", "api"] and "--workers" in command
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])


def test_server_and_workers_are_configured_by_environment(services: dict[str, Any]) -> None:
    for name in ("migrate", "api"):
        env = _env(services[name])
        assert env["DATABASE_URL"].startswith("postgresql://") and "@postgres:" in env["DATABASE_URL"]
        assert env["BROKER_URL"].startswith("redis://redis:")
    for name in ("worker-sim", "worker-npu"):
        env = _env(services[name])
        assert env["BROKER_URL"].startswith("redis://redis:")
        assert env["API_URL"] == "http://api:8000" and "WORKER_TOKEN" in env
        assert "DATABASE_URL" not in env  # workers reach the database only through the API


def test_sim_workers(services: dict[str, Any]) -> None:
    sim = services["worker-sim"]
    assert sim["deploy"]["replicas"] == 2
    assert sim["command"][:2] == ["crosscheck", "worker"]
    assert sim["command"][sim["command"].index("--queue") + 1] == "sim"
    assert "npu" not in sim["command"]


def test_workers_yield_the_cpu_to_the_api_and_the_database(services: dict[str, Any]) -> None:
    """Kernels' niceness counts only inside their own container (docs/platform.md §5): the containers' weights
    decide between the workers and the API or PostgreSQL (Docker's default, 1024, where none is given)."""
    for name in ("worker-sim", "worker-npu"):
        assert services[name]["cpu_shares"] < 1024
    for name in ("api", "postgres", "redis"):
        assert services[name].get("cpu_shares", 1024) >= 1024


def test_npu_worker_gets_the_devices_and_cann(services: dict[str, Any]) -> None:
    npu = services["worker-npu"]
    assert npu["command"][npu["command"].index("--queue") + 1] == "npu"
    assert {"/dev/davinci0", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"} <= set(npu["devices"])
    mounts = {m.split(":")[0]: m for m in npu["volumes"]}
    for path in ("/usr/local/Ascend/driver", "/usr/local/Ascend/ascend-toolkit"):
        assert mounts[path].endswith(":ro"), mounts
    assert _env(npu)["ASCEND_HOME_PATH"].startswith("/usr/local/Ascend/ascend-toolkit")


def test_dockerfile_installs_the_project() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert 'pip install -c /tmp/constraints.txt ".[job-tools]"' in text  # locked, with the test tools jobs import
    assert "constraints.txt" in text.split("RUN pip install")[0]  # copied in before the install
    assert "FROM python:3.11" in text and "AS npu" in text


def _docker(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout_s)


def test_docker_compose_accepts_the_file() -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI here: docker-compose.yml was checked structurally only")
    if _docker("compose", "version").returncode != 0:
        pytest.skip("the docker CLI has no compose plugin here: docker-compose.yml was checked structurally only")
    result = _docker("compose", "--profile", "npu", "config", "--quiet")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_the_image_builds() -> None:
    if shutil.which("docker") is None or _docker("info").returncode != 0:
        pytest.skip("no Docker daemon here: the Dockerfile was not built")
    result = _docker("build", "--target", "base", "-t", "pto-crosscheck:test", ".", timeout_s=3600)
    assert result.returncode == 0, result.stderr[-4000:]
