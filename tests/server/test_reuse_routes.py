"""Reuse for every route, whatever the verdict: two nights of an unchanged gym-shaped checkout through the
real worker, the second reusing every operator (a test script, a test module, a package, and an operator
whose cases fail before pypto is imported). docs/ci.md, "Reuse of unchanged results"."""
from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.conftest import EXAMPLES
from tests.server.test_ci_client import ci, junit_cases, live  # noqa: F401  (live: the module's server)

OPS = ("axpy", "RowSquareMean", "ScaleShift", "scale_add", "broken_early")


def _checkout(root: Path) -> Path:
    shutil.copytree(EXAMPLES / "gym-checkout", root)
    for name in ("scale_add", "broken_early"):
        dest = root / "extra" / name
        shutil.copytree(EXAMPLES / "scale_add", dest)
        cases = json.loads((dest / "test_cases.json").read_text())
        cases["op_name"] = name
        (dest / "test_cases.json").write_text(json.dumps(cases))
    impl = root / "extra" / "broken_early" / "scale_add_impl.py"
    impl.write_text('raise RuntimeError("this kernel fails before pypto is imported")\n' + impl.read_text())
    return root


def _night(live, checkout: Path, junit: Path) -> tuple[str, dict[str, str]]:  # noqa: F811
    from worker.capabilities import capabilities
    from worker.client import ApiClient
    from worker.jobs import WorkerContext, run_job

    api = ApiClient(live["url"], live["tokens"]["worker"])
    ctx = WorkerContext(api=api, name="real@test", cache_dir=live["cache"], heartbeat_s=5.0)
    stop = threading.Event()
    read = {"Authorization": f"Bearer {live['tokens']['read']}"}

    def work() -> None:
        while not stop.is_set():
            for job in httpx.get(live["url"] + "/api/v1/jobs", headers=read, timeout=10).json()["items"]:
                if job["status"] == "queued":
                    run_job(ctx, job["id"], job["attempts"])
            stop.wait(0.3)

    api.worker_heartbeat({"name": "real@test", "host": "t", "queues": ["sim"],
                          "capabilities": capabilities("ready")})  # the versions reuse is keyed on
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        args = [a for op in OPS for a in ("--op", op)]
        done = ci(live, checkout, *args, "--fail-on", "never", "--junit", str(junit), timeout_s=900)
    finally:
        stop.set()
        thread.join(120)
        ctx.close()
    assert done.returncode == 0, done.stdout + done.stderr
    cases = junit_cases(junit)
    verdicts = {k: {p.get("name"): p.get("value") for p in tc.iter("property")}["verdict"] for k, tc in cases.items()}
    return done.stderr, verdicts


@pytest.mark.slow
def test_a_second_unchanged_night_reuses_every_operator_whatever_its_route(live, tmp_path, calculator_cache):  # noqa: F811
    live["cache"] = calculator_cache
    checkout = _checkout(tmp_path / "gym")
    first_log, first = _night(live, checkout, tmp_path / "first.xml")
    assert "job " in first_log
    assert any(k.startswith("broken_early") and v not in ("pass", "sim_garbage_graph_ok") for k, v in first.items())
    second_log, second = _night(live, checkout, tmp_path / "second.xml")
    assert second == first  # the same verdicts, case by case
    lines = [ln.strip() for ln in second_log.splitlines() if ln.startswith("  ")]
    ran = [ln for ln in lines if "job " in ln and "reused" not in ln]
    assert not ran, second_log
    assert len([ln for ln in lines if "reused SIM" in ln]) == len(OPS), second_log
