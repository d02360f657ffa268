"""POST /submissions: multipart and JSON, idempotency, limits, bad packages, enqueue after commit."""
from __future__ import annotations

import base64
import io
import json
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from server.services import submissions, tokens

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

URL = "/api/v1/submissions"


def test_multipart_package_creates_a_job_per_mode_and_enqueues_them(client, hdr, scale_add_zip, messages):
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)},
                    data={"modes": ["sim", "npu"], "branch": "main", "commit": "abc123", "author": "li"})
    assert r.status_code == 202, r.text
    body = r.json()
    # No NPU worker is online: the npu job waits as awaiting_npu (its message is sent all the same).
    assert [(j["mode"], j["status"], j["queue"]) for j in body["jobs"]] == [("sim", "queued", "sim"),
                                                                           ("npu", "awaiting_npu", "npu")]
    sent = messages()
    assert [(m["queue"], m["task"], m["args"]) for m in sent] == [("sim", "jobs.run", [body["jobs"][0]["id"], 1]),
                                                                  ("npu", "jobs.run", [body["jobs"][1]["id"], 1])]
    # the job's timeout: 2 cases x case_timeout_s + overhead; hard limit = soft + 60 s
    soft = 2 * 300.0 + 120.0
    assert sent[0]["timelimit"] == [soft + 60.0, soft]

    sub = client.get(f"{URL}/{body['submission_id']}", headers=hdr["read"]).json()
    assert sub["operator"] == "scale_add" and sub["kind"] == "package" and sub["modes"] == ["sim", "npu"]
    assert sub["labels"] == {"branch": "main", "commit": "abc123", "author": "li"}
    assert sub["created_by"] == "submit-bot" and len(sub["jobs"]) == 2
    job = client.get(f"/api/v1/jobs/{body['jobs'][0]['id']}", headers=hdr["read"]).json()
    assert job["submitted_by"] == "submit-bot" and job["operator"] == "scale_add" and job["queue_position"] == 1


def test_comma_separated_modes_cases_and_operator_name(client, hdr, scale_add_zip):
    r = client.post(URL, headers=hdr["submit"], files={"file": ("pkg.zip", scale_add_zip)},
                    data={"modes": "npu,sim", "cases": "scale_add_32x64", "operator": "scale_add_v2"})
    assert r.status_code == 202, r.text
    sub = client.get(f"{URL}/{r.json()['submission_id']}", headers=hdr["read"]).json()
    assert sub["operator"] == "scale_add_v2" and sub["modes"] == ["npu", "sim"]
    assert sub["case_filter"] == ["scale_add_32x64"]


def test_tar_gz_package(client, hdr, files_of):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files_of("relu").items():
            data = text.encode()
            info = tarfile.TarInfo(f"relu/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    r = client.post(URL, headers=hdr["submit"], files={"file": ("relu.tar.gz", buf.getvalue())})
    assert r.status_code == 202, r.text
    assert [j["mode"] for j in r.json()["jobs"]] == ["sim"]


def test_json_files_submission(client, hdr, files_of, messages):
    payload = {"name": "scale_add", "files": files_of("scale_add"), "modes": ["sim"], "cases": ["scale_add_64x256"],
               "labels": {"branch": "dev", "author": "wang"}}
    r = client.post(URL, headers=hdr["submit"], json=payload)
    assert r.status_code == 202, r.text
    sub = client.get(f"{URL}/{r.json()['submission_id']}", headers=hdr["read"]).json()
    assert sub["kind"] == "package" and sub["case_filter"] == ["scale_add_64x256"]
    assert sub["labels"] == {"branch": "dev", "author": "wang"}
    assert len(messages()) == 1


def test_json_single_script(client, hdr):
    text = (EXAMPLES / "scripts" / "softmax_script.py").read_text()
    r = client.post(URL, headers=hdr["submit"], json={"files": {"softmax_script.py": text}})
    assert r.status_code == 202, r.text
    sub = client.get(f"{URL}/{r.json()['submission_id']}", headers=hdr["read"]).json()
    assert sub["kind"] == "script" and sub["filename"] == "softmax_script.py"


def test_idempotent_replay_answers_200_with_the_same_body(client, hdr, scale_add_zip, messages):
    headers = {**hdr["submit"], "Idempotency-Key": "ci-42"}
    first = client.post(URL, headers=headers, files={"file": ("scale_add.zip", scale_add_zip)})
    again = client.post(URL, headers=headers, files={"file": ("scale_add.zip", scale_add_zip)})
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == first.json()
    assert len(messages()) == 1  # the replay enqueues nothing


def test_idempotency_key_reused_for_another_bundle_is_a_conflict(client, hdr, scale_add_zip, make_zip, files_of):
    headers = {**hdr["submit"], "Idempotency-Key": "ci-43"}
    assert client.post(URL, headers=headers, files={"file": ("a.zip", scale_add_zip)}).status_code == 202
    other = make_zip(files_of("relu"), top="relu")
    r = client.post(URL, headers=headers, files={"file": ("b.zip", other)})
    assert r.status_code == 409
    assert "ci-43" in r.json()["detail"]


@pytest.mark.parametrize(("field", "change"), [
    ("modes", {"modes": ["sim", "npu"]}), ("operator", {"operator": "another_name"}),
    ("labels", {"branch": "dev"}), ("cases", {"cases": "scale_add_64x256"})])
def test_idempotency_key_reused_with_another_body_is_a_conflict_naming_it(client, hdr, scale_add_zip, field, change):
    headers = {**hdr["submit"], "Idempotency-Key": f"ci-body-{field}"}
    assert client.post(URL, headers=headers, files={"file": ("a.zip", scale_add_zip)}).status_code == 202
    r = client.post(URL, headers=headers, files={"file": ("a.zip", scale_add_zip)}, data=change)
    assert r.status_code == 409, r.text
    assert f"({field} differ)" in r.json()["detail"] and "different request" in r.json()["detail"]


def test_idempotency_keys_are_per_token(app, client, hdr, scale_add_zip):
    """Another token's identical key is another request: it neither replays nor blocks the first token's."""
    with app.state.sessionmaker.begin() as session:
        other = {"Authorization": f"Bearer {tokens.create(session, 'other-ci', ['submit'])[1]}"}
    first = client.post(URL, headers={**hdr["submit"], "Idempotency-Key": "shared"},
                        files={"file": ("a.zip", scale_add_zip)})
    second = client.post(URL, headers={**other, "Idempotency-Key": "shared"}, files={"file": ("a.zip", scale_add_zip)})
    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["submission_id"] != second.json()["submission_id"]
    replay = client.post(URL, headers={**other, "Idempotency-Key": "shared"}, files={"file": ("a.zip", scale_add_zip)})
    assert replay.status_code == 200 and replay.json() == second.json()


def test_a_retry_racing_the_first_request_gets_the_replay(app, client, hdr, token, scale_add_zip, settings):
    """The first request has inserted but not yet committed when its retry arrives with the same key."""
    session = app.state.sessionmaker()
    submit_token = tokens.verify(session, token["submit"])
    new = submissions.NewSubmission(filename="scale_add.zip", data=scale_add_zip, idempotency_key="race",
                                    submitted_by="submit-bot", token_id=submit_token.id)
    first, _, _ = submissions.create(session, app.state.blobs, settings, new)
    answer = {}

    def retry() -> None:
        answer["r"] = client.post(URL, headers={**hdr["submit"], "Idempotency-Key": "race"},
                                  files={"file": ("scale_add.zip", scale_add_zip)})

    racer = threading.Thread(target=retry)
    racer.start()
    time.sleep(0.5)
    assert racer.is_alive()  # waiting on the first transaction's locks
    session.commit()
    session.close()
    racer.join(30)
    assert answer["r"].status_code == 200, answer["r"].text
    assert answer["r"].json()["submission_id"] == first.id


def test_oversize_upload_is_413(client, hdr):
    big = b"x" * (client.app.state.settings.max_upload_bytes + 1)
    r = client.post(URL, headers=hdr["submit"], files={"file": ("big.zip", big)})
    assert r.status_code == 413
    assert "limit" in r.json()["detail"]


def test_oversize_json_is_413(client, hdr, files_of):
    padding = "y" * (2 * client.app.state.settings.max_upload_bytes + 70000)
    files = dict(files_of("scale_add"), **{"padding.txt": padding})
    r = client.post(URL, headers=hdr["submit"], json={"files": files})
    assert r.status_code == 413


def test_json_whose_bundle_is_oversize_is_413(client, hdr, files_of):
    limit = client.app.state.settings.max_upload_bytes
    noise = base64.b64encode(os.urandom(limit)).decode()  # about 1.33 x limit, barely compressible
    r = client.post(URL, headers=hdr["submit"], json={"files": dict(files_of("scale_add"), **{"noise.txt": noise})})
    assert r.status_code == 413 and "the limit is" in r.json()["detail"]


def _cases(files: dict[str, str]) -> dict:
    return json.loads(files["test_cases.json"])


@pytest.mark.parametrize(("mutate", "problem"), [
    (lambda c: c["test_cases"].append(dict(c["test_cases"][0])), "duplicate case id 'scale_add_32x64'"),
    (lambda c: c["test_cases"][0]["inputs"][0].update(dtype="float13"), "unknown dtype 'float13'"),
    (lambda c: c.pop("test_cases"), "'test_cases' must be a non-empty list"),
])
def test_bad_package_is_422_naming_the_problem(client, hdr, files_of, make_zip, mutate, problem):
    files = files_of("scale_add")
    cases = _cases(files)
    mutate(cases)
    files["test_cases.json"] = json.dumps(cases)
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", make_zip(files, top="scale_add"))})
    assert r.status_code == 422
    assert problem in r.json()["detail"]


@pytest.mark.parametrize(("data", "problem"), [
    ({"modes": "sim,gpu"}, "unknown mode(s) gpu"),
    ({"cases": "no_such_case"}, "unknown case id(s) no_such_case"),
    ({"suite_run_id": "12345"}, "no suite run 12345"),
    ({"suite_run_id": "abc"}, "suite_run_id must be an integer"),
    ({"name": "a", "operator": "b"}, "not two different names"),
])
def test_bad_form_fields_are_422(client, hdr, scale_add_zip, data, problem):
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)}, data=data)
    assert r.status_code == 422
    assert problem in r.json()["detail"]


@pytest.mark.parametrize(("kwargs", "problem"), [
    ({"data": {"modes": "sim"}}, "field 'file'"),
    ({"files": {"file": ("kernel.exe", b"MZ")}}, "upload an operator package"),
    ({"files": {"file": ("broken.zip", b"not a zip")}}, "broken.zip"),
    ({"json": {"files": {}}}, "'files' is empty"),
    ({"json": {"files": {"../evil.py": "x"}}}, "bad file name"),
    ({"json": {"modes": ["sim"]}}, "body.files: Field required"),
    ({"json": {"files": {"a.py": "x"}, "modes": ["tpu"]}}, "body.modes.0"),
    ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, "body"),
    ({"content": b"plain", "headers": {"Content-Type": "text/plain"}}, "multipart/form-data"),
])
def test_bad_bodies_are_422(client, hdr, kwargs, problem):
    kwargs = dict(kwargs)  # shared by both database runs
    headers = {**hdr["submit"], **kwargs.pop("headers", {})}
    r = client.post(URL, headers=headers, **kwargs)
    assert r.status_code == 422, r.text
    assert problem in r.json()["detail"]


def test_unknown_submission_is_404(client, hdr):
    r = client.get(f"{URL}/999", headers=hdr["read"])
    assert r.status_code == 404 and r.json() == {"detail": "no submission 999"}


def test_a_dead_broker_does_not_fail_the_submission(make_app, settings, hdr, scale_add_zip):
    app = make_app(settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"}))
    with TestClient(app) as client:
        r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", scale_add_zip)})
        assert r.status_code == 202, r.text
        job = client.get(f"/api/v1/jobs/{r.json()['jobs'][0]['id']}", headers=hdr["read"])
        assert job.json()["status"] == "queued"  # stays queued; the sweeper re-sends it
