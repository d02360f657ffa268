"""Exfiltration through the service (issue 8 item 1): a real API and a real Celery worker.

The submission links its plogs to /etc/shadow, the service's tokens.json and a root-only file;
the job's logs, report and every artifact a user can download must hold none of them.
(test_evidence_links.py shows the unfixed harness functions leaking the same links.)
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from client.submit import bundle
from tests.e2e.conftest import Stack, running, sqlite_env  # noqa: F401  (the fixture, used by name below)
from tests.hostile.evidence_kit import NORMAL, package, secret_file

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(sqlite_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:  # noqa: F811
    with running("sqlite", dict(sqlite_env), tmp_path_factory.mktemp("hostile-service-logs"),
                 worker="hostile-evidence") as stack:
        yield stack


def test_logs_and_artifacts_hold_no_linked_secret(service: Stack, tmp_path: Path) -> None:
    data = Path(service.env["DATA_DIR"])
    tokens = data / "tokens.json"
    tokens.write_text(json.dumps({"admin": service.env["CROSSCHECK_TOKEN"]}))
    tokens.chmod(0o600)
    root_file, root_secret = secret_file(Path("/root"), f".crosscheck-hostile-{uuid.uuid4().hex[:8]}")
    secrets = {"/etc/shadow": Path("/etc/shadow").read_text().splitlines()[0],
               str(tokens): service.env["CROSSCHECK_TOKEN"], str(root_file): root_secret}
    body = f'''
import os
plog = os.path.join(os.environ["ASCEND_PROCESS_LOG_PATH"], "debug", "plog")
os.makedirs(plog, exist_ok=True)
for i, target in enumerate({list(secrets)!r}):
    os.symlink(target, os.path.join(plog, f"pypto-log-{{i}}_1.log"))
''' + NORMAL
    try:
        filename, blob = bundle(package(tmp_path, body))
        accepted = service.post("/submissions", data={"modes": ["sim"]}, files={"file": (filename, blob)},
                                headers={"Idempotency-Key": uuid.uuid4().hex})
        job_id = accepted["jobs"][0]["id"]
        job = service.wait_job(job_id)
        assert job["status"] in ("succeeded", "failed"), job  # it ran; its verdict says the rest
        shown = [json.dumps(service.get(f"/jobs/{job_id}/logs")), json.dumps(service.get(f"/jobs/{job_id}/report"))]
        listed = [item["path"] for item in service.get(f"/jobs/{job_id}/artifacts")["items"]]
        assert any("plog/" in p for p in listed), listed  # pypto's own plogs still arrive
        for path in listed:
            r = service.http.get(f"/jobs/{job_id}/artifacts/{path}")
            assert r.status_code == 200, (path, r.status_code)
            shown.append(r.text)
        text = "\n".join(shown)
        for where, value in secrets.items():
            assert value not in text, f"{where} leaked through the service"
        report = service.get(f"/jobs/{job_id}/report")
        case = report["cases"][0]
        assert case["verdict"] == "suspect_fake_pass" and "tampered" in case["verdict_reason"], case  # runtime/fence/audit.py
        assert sum("a symbolic link" in r for r in case["evidence"]["refused_files"]) >= len(secrets)
    finally:
        root_file.unlink()
