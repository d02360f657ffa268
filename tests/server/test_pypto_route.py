"""Submissions that ask for a pypto version: their queue, and refusal when no online worker has it."""
from __future__ import annotations

import json

URL = "/api/v1/submissions"


def beat(client, hdr, name: str, pypto: str, queues: list[str]):  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/workers/heartbeat", headers=hdr["worker"],
                    json={"name": name, "host": "h", "queues": queues,
                          "capabilities": {"modes": ["sim"], "versions": {"pypto": pypto}}})
    assert r.status_code == 200, r.text


def test_no_online_worker_with_the_version_refuses_the_submission(client, hdr, scale_add_zip, messages):
    beat(client, hdr, "sim@ref", "0.2.0", ["sim", "sim@0.2.0"])
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)},
                    data={"pypto": "0.3.0.dev0"})
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert "no online worker has pypto 0.3.0.dev0" in detail and "online workers have pypto 0.2.0" in detail
    assert messages() == []


def test_a_versioned_job_goes_to_its_versions_queue(client, hdr, scale_add_zip, messages):
    beat(client, hdr, "sim@dev", "0.3.0.dev0", ["sim@0.3.0.dev0"])
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)},
                    data={"pypto": "0.3.0.dev0"})
    assert r.status_code == 202, r.text
    [job] = r.json()["jobs"]
    assert job["queue"] == "sim@0.3.0.dev0"
    assert [m["queue"] for m in messages()] == ["sim@0.3.0.dev0"]
    plain = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)})
    assert plain.status_code == 202 and plain.json()["jobs"][0]["queue"] == "sim"


def test_requires_pypto_in_test_cases_routes_the_job(client, hdr, files_of, make_zip):
    beat(client, hdr, "sim@dev", "0.3.0.dev0", ["sim@0.3.0.dev0"])
    files = files_of("scale_add")
    spec = json.loads(files["test_cases.json"])
    files["test_cases.json"] = json.dumps({**spec, "requires_pypto": "0.3.0.dev0"})
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", make_zip(files, top="scale_add"))})
    assert r.status_code == 202, r.text
    assert r.json()["jobs"][0]["queue"] == "sim@0.3.0.dev0"
    clash = client.post(URL, headers=hdr["submit"], data={"pypto": "0.2.0"},
                        files={"file": ("scale_add.zip", make_zip(files, top="scale_add"))})
    assert clash.status_code == 422 and "contradicts test_cases.json's requires_pypto 0.3.0.dev0" in clash.json()["detail"]


def test_a_malformed_version_is_422(client, hdr, scale_add_zip):
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)},
                    data={"pypto": "0.2 ; rm"})
    assert r.status_code == 422 and "is not a pypto version" in r.json()["detail"]


def test_reuse_compares_with_the_workers_of_the_jobs_queue(client, hdr, app):  # type: ignore[no-untyped-def]
    from server.services import reuse

    for name, pypto, queues in (("sim@ref", "0.2.0", ["sim", "sim@0.2.0"]), ("sim@dev", "0.3.0.dev0", ["sim@0.3.0.dev0"])):
        r = client.post("/api/v1/workers/heartbeat", headers=hdr["worker"],
                        json={"name": name, "host": "h", "queues": queues,
                              "capabilities": {"modes": ["sim"], "versions": {"pypto": pypto, "runtime": "r1"}}})
        assert r.status_code == 200, r.text
    with app.state.sessionmaker() as session:
        plain = reuse.target_versions(session, "sim", app.state.settings.job_heartbeat_s)
        dev = reuse.target_versions(session, "sim@0.3.0.dev0", app.state.settings.job_heartbeat_s)
    assert plain.versions is not None and plain.versions["pypto"] == "0.2.0"
    assert dev.versions is not None and dev.versions["pypto"] == "0.3.0.dev0"


def test_a_suite_runs_operator_asks_for_its_version(client, hdr, scale_add_zip, messages):
    """`crosscheck ci run --pypto`: the suite-run submission routes like POST /submissions."""
    run = client.post("/api/v1/suite-runs", headers=hdr["submit"],
                      json={"suite": "nightly", "run_key": "k1", "modes": ["sim"]})
    assert run.status_code in (200, 201), run.text
    url = f"/api/v1/suite-runs/{run.json()['id']}/submissions"
    refused = client.post(url, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)},
                          data={"operator": "scale_add", "pypto": "0.3.0.dev0"})
    assert refused.status_code == 409 and "no online worker has pypto 0.3.0.dev0" in refused.json()["detail"]
    beat(client, hdr, "sim@dev", "0.3.0.dev0", ["sim@0.3.0.dev0"])
    r = client.post(url, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)},
                    data={"operator": "scale_add", "pypto": "0.3.0.dev0"})
    assert r.status_code == 202, r.text
    assert [j["queue"] for j in r.json()["jobs"]] == ["sim@0.3.0.dev0"]
    assert [m["queue"] for m in messages()] == ["sim@0.3.0.dev0"]
