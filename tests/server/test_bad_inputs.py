"""Hostile or impossible input gets a 4xx naming the problem (never a 500), and `crosscheck run` exits 2
with a one-line error.

Each case here was a 500, a traceback or an unbounded buffer before (docs/SECURITY.md, "Bad input").
"""
from __future__ import annotations

import asyncio
import gzip
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from fastapi.testclient import TestClient

from tests.server.conftest import REPO, make_tokens, package_files, zip_package
from tests.server.test_lifecycle import INTERNAL, claim

API = "/api/v1"
URL = f"{API}/submissions"
BIG = str(2**64 + 1)


def tar_gz(members: list[tuple[bytes | str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def cases_with(**change) -> dict[str, str]:
    files = package_files("scale_add")
    cases = json.loads(files["test_cases.json"])
    cases["test_cases"][0].update(change)
    files["test_cases.json"] = json.dumps(cases)
    return files


def refused(response, *words: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    detail = response.json()["detail"]
    assert all(w in detail for w in words), detail


def test_a_tar_member_with_a_non_utf8_name(client, hdr):
    files = [(f"scale_add/{n}", t.encode()) for n, t in package_files("scale_add").items()]
    data = tar_gz([*files, (b"scale_add/\xff\xfe.py", b"x = 1\n")])
    refused(client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.tar.gz", data)}), "not UTF-8")


def test_400k_empty_members_are_refused_while_streaming(make_app, settings, hdr):
    header = tarfile.TarInfo("e").tobuf(tarfile.GNU_FORMAT)
    data = gzip.compress(header * 400_000 + b"\0" * 1024, compresslevel=1)  # about 0.4 MB, 400k members
    app = make_app(settings.model_copy(update={"max_upload_bytes": 20 * 1024 * 1024}))
    from fastapi.testclient import TestClient

    from tests.server.conftest import make_tokens

    with TestClient(app) as client:
        secret = make_tokens(app)["submit"]
        r = client.post(URL, headers={"Authorization": f"Bearer {secret}"}, files={"file": ("many.tar.gz", data)})
    refused(r, "too many members (more than")  # counted as read: it stopped at the limit


def test_a_deeply_nested_test_cases_json(client, hdr):
    files = package_files("scale_add")
    files["test_cases.json"] = "[" * 100_000 + "]" * 100_000
    refused(client.post(URL, headers=hdr["submit"], files={"file": ("s.zip", zip_package(files, "scale_add"))}),
            "nested too deeply")


def test_deeply_nested_json_bodies(client, hdr, seed):
    nested = "[" * 100_000 + "]" * 100_000
    body = '{"files": {"k.py": "x"}, "labels": ' + nested + "}"
    refused(client.post(URL, headers={**hdr["submit"], "Content-Type": "application/json"}, content=body))
    job_id = seed.submit("scale_add", ("sim",))[0]
    claim(client, hdr, job_id)
    r = client.post(f"{INTERNAL}/{job_id}/result", headers=hdr["worker"], data={"attempt": "1", "report": nested})
    refused(r, "nested too deeply")
    r = client.post(f"{API}/ingest/report", headers={**hdr["upload"], "Content-Type": "application/json"},
                    params={"suite": "s", "run_key": "k"}, content=nested)
    refused(r, "nested too deeply")


@pytest.mark.parametrize("url", [
    f"/jobs/{BIG}", f"/jobs/{BIG}/report", f"/submissions/{BIG}", f"/suite-runs/{BIG}",
    f"/cases?cursor={BIG}", f"/cases?job_id={BIG}", f"/suite-runs/1/results?cursor={BIG}",
    f"/operators/relu/history?cursor={BIG}", f"/audit?before={BIG}", f"/jobs/-{BIG}"])
def test_integers_above_int64_in_paths_cursors_and_offsets(client, hdr, url):
    refused(client.get(API + url, headers=hdr["admin"]))


@pytest.mark.parametrize("url", ["/jobs/%C2%B2", "/suite-runs/1/compare/%C2%B2", "/cases?cursor=%D9%A3"])
def test_non_ascii_digits_in_integer_parameters(client, hdr, url):
    # '²' and Arabic-Indic digits pass str.isdigit() but not int(): found by the schemathesis fuzz run.
    r = client.get(API + url, headers=hdr["admin"])
    assert r.status_code == 422 and "detail" in r.json()


def test_integers_above_int64_in_bodies(client, hdr, seed):
    job_id = seed.submit("scale_add", ("sim",))[0]
    refused(client.post(f"{INTERNAL}/{job_id}/claim", headers=hdr["worker"], json={"worker": "w", "attempt": 2**64}))
    beat = {"name": "w", "host": "h", "current_job_id": 2**64}
    refused(client.post(f"{API}/workers/heartbeat", headers=hdr["worker"], json=beat))
    refused(client.post(URL, headers=hdr["submit"], json={"files": package_files("scale_add"), "suite_run_id": 2**64}))
    refused(client.post(URL, headers=hdr["submit"], data={"suite_run_id": BIG},
                        files={"file": ("s.zip", zip_package(package_files("scale_add"), "scale_add"))}))
    r = client.post(f"{INTERNAL}/{job_id}/result", headers=hdr["worker"], data={"attempt": BIG})
    refused(r, "attempt")


def test_a_chunked_json_body_is_cut_while_streaming(app, hdr):
    """Driven as ASGI (TestClient would read the whole generator first): the server stops pulling
    chunks once the body passes its limit (576 KiB for this test app), not at the end of 640 MiB."""
    pulled, sent = [0], []
    chunk = b"x" * 65536

    async def receive():
        pulled[0] += 1
        if pulled[0] > 10_000:
            return {"type": "http.request", "body": b'"}}', "more_body": False}
        return {"type": "http.request", "body": b'{"files": {"k.py": "' if pulled[0] == 1 else chunk, "more_body": True}

    async def send(message):
        sent.append(message)

    headers = [(b"content-type", b"application/json"), (b"host", b"testserver"),
               (b"authorization", hdr["submit"]["Authorization"].encode())]  # no content-length: chunked
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": URL, "raw_path": URL.encode(), "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 1), "server": ("testserver", 80), "root_path": "", "app": app}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413 and b"counted as it arrived" in sent[1]["body"]
    assert pulled[0] < 20


IMPOSSIBLE = [({"seed": 2**70}, "outside torch.manual_seed's range"),
              ({"inputs": [{"name": "x", "shape": [1] * 65, "dtype": "float32"}]}, "65 dims"),
              ({"inputs": [{"name": "x", "shape": [100000, 100000], "dtype": "float32"}]}, "memory limit")]


@pytest.mark.parametrize(("change", "words"), IMPOSSIBLE, ids=["seed", "dims", "memory"])
def test_impossible_cases_are_refused_at_submission(make_app, settings, change, words):
    # The memory check needs a limit the server knows: CASE_MEMORY_GIB (unset, each worker checks its own host).
    app = make_app(settings.model_copy(update={"case_memory_gib": 8.0}))
    hdr = {scope: {"Authorization": f"Bearer {secret}"} for scope, secret in make_tokens(app).items()}
    with TestClient(app) as client:
        data = zip_package(cases_with(**change), "scale_add")
        r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", data)})
        refused(r, words)
        assert client.get(f"{API}/jobs", headers=hdr["read"]).json()["items"] == []


def test_a_case_too_big_for_any_limit_waits_for_the_worker_when_the_server_sets_none(client, hdr):
    data = zip_package(cases_with(**IMPOSSIBLE[2][0]), "scale_add")
    r = client.post(URL, headers=hdr["submit"], files={"file": ("scale_add.zip", data)})
    assert r.status_code == 202, r.text  # the worker refuses it against its own host's share


@pytest.mark.parametrize(("change", "words"), IMPOSSIBLE, ids=["seed", "dims", "memory"])
def test_impossible_cases_exit_2_in_crosscheck_run(tmp_path: Path, change, words):
    package = tmp_path / "scale_add"
    package.mkdir()
    for name, text in cases_with(**change).items():
        (package / name).write_text(text)
    done = subprocess.run([sys.executable, "-m", "runtime", "run", str(package), "--work-dir", str(tmp_path / "w")],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr
    assert not list((tmp_path / "w").glob("jobs/*"))  # nothing ran


def _non_utf8_member(path: Path) -> Path:
    files = [(f"scale_add/{n}", t.encode()) for n, t in package_files("scale_add").items()]
    path.write_bytes(tar_gz([*files, (b"scale_add/\xff\xfe.py", b"x = 1\n")]))
    return path


def _too_many_members(path: Path) -> Path:
    from runtime.intake.archive import MAX_MEMBERS

    header = tarfile.TarInfo("e").tobuf(tarfile.GNU_FORMAT)
    path.write_bytes(gzip.compress(header * (MAX_MEMBERS + 500) + b"\0" * 1024, compresslevel=1))
    return path


def _deeply_nested_cases(path: Path) -> Path:
    path.mkdir()
    for name, text in package_files("scale_add").items():
        (path / name).write_text("[" * 100_000 + "]" * 100_000 if name == "test_cases.json" else text)
    return path


@pytest.mark.parametrize(("make", "name", "words"), [
    (_non_utf8_member, "scale_add.tar.gz", "not UTF-8"),
    (_too_many_members, "many.tar.gz", "too many members"),
    (_deeply_nested_cases, "scale_add", "test_cases.json: nested too deeply")], ids=["non-utf8", "members", "nested"])
def test_hostile_packages_exit_2_in_crosscheck_run(tmp_path: Path, make, name, words):
    bad = make(tmp_path / name)
    done = subprocess.run([sys.executable, "-m", "runtime", "run", str(bad), "--work-dir", str(tmp_path / "w")],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], done.stderr
    assert not list((tmp_path / "w").glob("jobs/*"))  # nothing ran
