"""An identical submission links the earlier job's results instead of running again (issue 36): the same files,
cases, pypto and host versions; `fresh` runs it anyway, and any difference runs it."""
from __future__ import annotations

from typing import Any

from tests.server.suites import SuiteDriver, scale_add, sim_report, zip_files


def submit(ci: SuiteDriver, files: dict[str, str], key: str | None = None, **form: str) -> tuple[int, dict[str, Any]]:
    headers = {**ci.hdr["submit"], **({"Idempotency-Key": key} if key else {})}
    r = ci.client.post("/api/v1/submissions", headers=headers, data={"operator": "alpha", **form},
                       files={"file": ("alpha.zip", zip_files(files))})
    assert r.status_code in (200, 202), r.text
    return r.status_code, dict(r.json())


def test_an_identical_submission_links_the_earlier_job(client, hdr):  # type: ignore[no-untyped-def]
    ci = SuiteDriver(client, hdr)
    ci.heartbeat()
    _, first = submit(ci, scale_add())
    (job,) = first["jobs"]
    assert first["reused"] == {}
    ci.work(job["id"], sim_report(scale_add(), "alpha"))

    code, again = submit(ci, scale_add(), key="k-1")
    assert code == 202 and again["reused"] == {"sim": job["id"]}
    assert [(j["id"], j["status"]) for j in again["jobs"]] == [(job["id"], "succeeded")]
    jobs = client.get("/api/v1/jobs", headers=hdr["read"]).json()["items"]
    assert [j["id"] for j in jobs] == [job["id"]]  # nothing new to run
    code, replay = submit(ci, scale_add(), key="k-1")  # a client's retry of the same request
    assert code == 200 and replay["reused"] == {"sim": job["id"]} and replay["submission_id"] == again["submission_id"]

    _, fresh = submit(ci, scale_add(), fresh="true")
    assert fresh["reused"] == {} and fresh["jobs"][0]["id"] != job["id"] and fresh["jobs"][0]["status"] == "queued"
    _, changed = submit(ci, scale_add("\n"))  # one byte of the kernel
    assert changed["reused"] == {} and changed["jobs"][0]["status"] == "queued"


def test_no_reuse_without_a_worker_reporting_the_same_versions(client, hdr):  # type: ignore[no-untyped-def]
    ci = SuiteDriver(client, hdr)
    ci.heartbeat()
    _, first = submit(ci, scale_add())
    ci.work(first["jobs"][0]["id"], sim_report(scale_add(), "alpha"))
    ci.heartbeat(pypto="0.2.1")  # the worker was upgraded
    _, again = submit(ci, scale_add())
    assert again["reused"] == {} and again["jobs"][0]["status"] == "queued"
