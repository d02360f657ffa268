"""Workers with different pyptos end to end: real API, real SQLite broker, real Celery workers, real runtime.

The second pypto is the real pypto 0.2.0 package under another version label: a `pypto-9.9.9.dev0.dist-info`
made here, first on the worker's PYTHONPATH, which is what a pypto built from source and installed beside it
reports (docs/versions.md §4). Routing and the graph-verify guard read only that label.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from client.submit import bundle
from tests.conftest import EXAMPLES
from tests.e2e.conftest import Stack

pytestmark = pytest.mark.slow
DEV = "9.9.9.dev0"


def dev_pypto_path(root: Path) -> Path:
    """A site dir holding only pypto's version label: DEV."""
    info = root / f"pypto-{DEV}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pypto\nVersion: {DEV}\n")
    for path in (root, info, info / "METADATA"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the sandboxed job uid reads it too
    return root


@pytest.fixture(scope="module")
def versions_stack(sqlite_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack("pypto-versions", dict(sqlite_env), tmp_path_factory.mktemp("logs-versions"))
    try:
        s.start_api()
        yield s
    finally:
        s.stop()


def submit(stack: Stack, pypto: str | None) -> httpx.Response:
    filename, data = bundle(EXAMPLES / "relu")
    form: dict[str, Any] = {"cases": ["relu_32x64"], **({"pypto": pypto} if pypto else {})}
    return stack.http.post("/submissions", data=form, files={"file": (filename, data)},
                           headers={"Idempotency-Key": uuid.uuid4().hex})


def test_a_worker_with_another_pypto_gets_only_the_jobs_that_ask_for_it(versions_stack: Stack,
                                                                        tmp_path: Path) -> None:
    stack = versions_stack
    site = dev_pypto_path(tmp_path / "site")
    path = os.pathsep.join(p for p in (str(site), stack.env.get("PYTHONPATH", "")) if p)
    stack.start_worker("dev", env=dict(stack.env, PYTHONPATH=path))
    [dev_worker] = [w for w in stack.get("/workers")["items"] if w["name"].startswith("dev@")]
    assert dev_worker["capabilities"]["versions"]["pypto"] == DEV
    assert dev_worker["queues"] == [f"sim@{DEV}"]

    plain = submit(stack, None)
    assert plain.status_code == 202, plain.text
    [plain_job] = plain.json()["jobs"]
    refused = submit(stack, "0.2.0")  # no online worker has the reference pypto
    assert refused.status_code == 409 and "no online worker has pypto 0.2.0" in refused.json()["detail"]
    assert f"online workers have pypto {DEV}" in refused.json()["detail"]
    asked = submit(stack, DEV)
    assert asked.status_code == 202, asked.text
    [dev_job] = asked.json()["jobs"]
    assert dev_job["queue"] == f"sim@{DEV}"

    done = stack.wait_job(dev_job["id"])
    assert done["worker"].startswith("dev@")
    report = stack.get(f"/jobs/{dev_job['id']}/report")
    assert report["environment"]["pypto"] == DEV
    [case] = report["cases"]
    assert case["graph_verify"]["status"] == "unavailable"
    assert case["graph_verify"]["reason"].startswith(f"graph verify unavailable: pypto {DEV} not supported")
    assert case["verdict"] == "sim_output_unwritten"  # SIM still ran the kernel
    # The dev worker was free all along and never took the job that asked for no version.
    waiting = stack.get(f"/jobs/{plain_job['id']}")
    assert (waiting["status"], waiting["worker"], waiting["queue"]) == ("queued", None, "sim")

    stack.start_worker("ref")  # the reference pypto: consumes sim and sim@0.2.0
    ran = stack.wait_job(plain_job["id"])
    assert ran["worker"].startswith("ref@") and ran["status"] in ("succeeded", "failed")
    assert stack.get(f"/jobs/{plain_job['id']}/report")["environment"]["pypto"] == "0.2.0"
