"""Drive suite runs through the API as `crosscheck ci run` and a worker would (tests only)."""
from __future__ import annotations

import copy
import io
import json
import tempfile
import uuid
import zipfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from runtime.intake import submission as runtime_submission
from runtime.devices.host import environment
from tests.server.conftest import FIXTURES, package_files

WORKER = "ci-worker@test"


def versions(**override: Any) -> dict[str, Any]:
    env = environment()
    return {"pypto": env.pypto, "torch": env.torch, "python": env.python, "cann": env.cann,
            "runtime": env.runtime, **override}


def zip_files(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in sorted(files):
            zf.writestr(name, files[name])
    return buf.getvalue()


def content_hash(files: dict[str, str]) -> str:
    """What the runtime reports as the submission's sha256 for these files."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            (Path(tmp) / name).write_text(text)
        return runtime_submission.load(Path(tmp), Path(tmp) / "work").sha256


def sim_report(files: dict[str, str], operator: str, verdicts: dict[str, str] | None = None,
               graph_diffs: dict[str, float] | None = None, env: dict[str, Any] | None = None) -> dict[str, Any]:
    """A worker's SIM report for these files: the real scale_add report with planted verdicts and diffs."""
    report = json.loads((FIXTURES / "scale_add_sim.json").read_text())
    report["submission"]["sha256"] = content_hash(files)
    report["submission"]["name"] = operator
    report["environment"] = {**report["environment"], **versions(), **(env or {})}
    for case in report["cases"]:
        case["operator"] = operator
        verdict = (verdicts or {}).get(case["case"])
        if verdict:
            case["verdict"] = verdict
            if verdict == "structural_error":
                case["structural"], case["graph_verify"] = "error", None
                case["diagnosis"] = [{"rule": "vec-tile-shape-not-set", "cause": "c", "fix": "f", "sim_only": False}]
        diff = (graph_diffs or {}).get(case["case"])
        if diff is not None and case.get("graph_verify"):
            case["graph_verify"] = copy.deepcopy(case["graph_verify"])
            case["graph_verify"].setdefault("metrics", {})["max_abs_diff"] = diff
    return report


class SuiteDriver:
    def __init__(self, client: TestClient, hdr: dict[str, dict[str, str]]):
        self.client, self.hdr = client, hdr

    def heartbeat(self, modes: tuple[str, ...] = ("sim",), **override: Any) -> None:
        body = {"name": WORKER, "host": "test", "queues": list(modes),
                "capabilities": {"modes": list(modes), "devices": [], "versions": versions(**override)}}
        r = self.client.post("/api/v1/workers/heartbeat", json=body, headers=self.hdr["worker"])
        assert r.status_code == 200, r.text

    def open(self, suite: str = "nightly", branch: str = "main", reuse: bool = True, key: str | None = None,
             modes: tuple[str, ...] = ("sim",)) -> dict[str, Any]:
        r = self.client.post("/api/v1/suite-runs", headers=self.hdr["submit"], json={
            "suite": suite, "run_key": key or uuid.uuid4().hex, "modes": list(modes), "reuse": reuse,
            "labels": {"branch": branch, "commit": uuid.uuid4().hex[:7], "pipeline": "https://ci.example/1"}})
        assert r.status_code in (200, 201), r.text
        return dict(r.json())

    def submit(self, run_id: int, operator: str, files: dict[str, str]) -> dict[str, Any]:
        r = self.client.post(f"/api/v1/suite-runs/{run_id}/submissions", headers=self.hdr["submit"],
                             data={"operator": operator}, files={"file": (f"{operator}.zip", zip_files(files))})
        assert r.status_code in (200, 202), r.text
        return dict(r.json())

    def work(self, job_id: int, report: dict[str, Any] | None, error: str | None = None) -> None:
        """Claim the job and post its result, as worker/jobs.py does."""
        r = self.client.post(f"/api/v1/internal/jobs/{job_id}/claim", headers=self.hdr["worker"],
                             json={"worker": WORKER, "attempt": 1})
        assert r.status_code == 200, r.text
        data: dict[str, str] = {"attempt": "1"}
        if report is not None:
            data["report"] = json.dumps(report)
        if error is not None:
            data["error"] = error
        r = self.client.post(f"/api/v1/internal/jobs/{job_id}/result", headers=self.hdr["worker"], data=data)
        assert r.status_code == 200 and r.json()["stored"], r.text

    def close(self, run_id: int) -> dict[str, Any]:
        r = self.client.post(f"/api/v1/suite-runs/{run_id}/close", headers=self.hdr["submit"])
        assert r.status_code == 200, r.text
        return dict(r.json())

    def get(self, path: str, **params: Any) -> Any:
        r = self.client.get("/api/v1" + path, params=params, headers=self.hdr["read"])
        assert r.status_code == 200, r.text
        return r.json()

    def run_suite(self, ops: dict[str, tuple[dict[str, str], dict[str, Any] | None]], **open_kwargs: Any
                  ) -> dict[str, Any]:
        """Open, submit every operator, run each new job with its report, close; the finished run."""
        run = self.open(**open_kwargs)
        for name, (files, report) in ops.items():
            accepted = self.submit(run["id"], name, files)
            for job in accepted["jobs"]:
                self.work(job["id"], report)
        closed = self.close(run["id"])
        assert closed["status"] == "finished", closed
        return closed


def scale_add(one_more_byte: str = "") -> dict[str, str]:
    """The scale_add package; `one_more_byte` is appended to the kernel (a one-byte change)."""
    files = package_files("scale_add")
    assert len(one_more_byte.encode()) <= 1
    files["scale_add_impl.py"] += one_more_byte
    return files
