"""Submitting through the plain form (no JavaScript), signing in and out, anonymous read."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from server.migrate import upgrade
from server.models import Job
from server.services import tokens
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.web.seed import EXAMPLES, bundle
from tests.web.test_overview import get
from tests.signin import sign_in


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """An empty migrated database; anonymous read on; tokens for each scope."""
    settings = make_settings(tmp_path / "data", anonymous_read=True)
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        secrets = {scopes: tokens.create(session, scopes, scopes.split())[1] for scopes in ("read", "submit")}
        session.commit()
    with TestClient(app, follow_redirects=False) as client:
        client.app_state = app.state  # type: ignore[attr-defined]
        yield client, secrets


def test_plain_form_post_redirects_to_the_job_page(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, secrets = fresh
    sign_in(client, secrets["submit"])
    response = client.post("/submit", files={"file": ("scale_add.zip", bundle("scale_add"), "application/zip")},
                           data={"modes": ["sim", "npu"], "branch": "main", "author": "carol"})
    assert response.status_code == 303
    job_url = response.headers["location"]
    assert job_url.startswith("/jobs/")
    with client.app_state.sessionmaker() as session:  # type: ignore[attr-defined]
        jobs = list(session.scalars(select(Job).order_by(Job.id)))
    assert [(j.mode, j.status, j.submitted_by) for j in jobs] == [("sim", "queued", "submit"), ("npu", "awaiting_npu", "submit")]  # no NPU worker online
    page = get(client, job_url)
    assert "Queued" in page.find("section", id="live").text()
    assert "Other modes" in page.find("dl", cls="facts").text()


def test_single_script_upload(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, secrets = fresh
    sign_in(client, secrets["submit"])
    script = (EXAMPLES / "scripts" / "softmax_script.py").read_bytes()
    response = client.post("/submit", files={"file": ("softmax_script.py", script, "text/x-python")},
                           data={"modes": "sim"})
    assert response.status_code == 303


def test_a_bad_upload_is_explained_on_an_html_page(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, secrets = fresh
    sign_in(client, secrets["submit"])
    response = client.post("/submit", files={"file": ("notes.txt", b"hello", "text/plain")}, data={"modes": "sim"})
    assert response.status_code == 422 and response.headers["content-type"].startswith("text/html")
    assert "upload an operator package" in parse(response.text).find("p", cls="detail").text()
    response = client.post("/submit", files={"file": ("k.zip", bundle("scale_add"), "application/zip")},
                           data={"modes": "gpu"})
    assert response.status_code == 422 and "unknown mode" in response.text


def test_submit_form_needs_the_submit_scope(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, secrets = fresh
    anonymous = client.get("/submit")
    assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login?next=%2Fsubmit"
    sign_in(client, secrets["read"])
    assert get(client, "/submit", status=403).find("h1").text() == "403 · Not allowed"
    sign_in(client, secrets["submit"])
    form = get(client, "/submit").find("form", id="submit-form")
    assert form.attrs["enctype"] == "multipart/form-data" and form.attrs["action"] == "/submit"
    assert form.find("input", type="file").attrs["id"] == "s-file"
    assert [c.attrs["value"] for c in form.find_all("input", type="checkbox")] == ["sim", "npu"]


def test_anonymous_read_shows_pages_and_a_sign_in_link(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, _ = fresh
    page = get(client, "/")
    assert "No results yet" in page.find("div", cls="empty").text()
    assert page.find("div", cls="who").find("a").attrs["href"] == "/login"
    assert "No worker has reported yet" in get(client, "/workers").text()


def test_sign_in_sets_an_httponly_cookie_and_sign_out_clears_it(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, secrets = fresh
    response = client.post("/login", data={"token": secrets["read"], "next": "/workers"})
    assert response.status_code == 303 and response.headers["location"] == "/workers"
    cookie = response.headers["set-cookie"].lower()
    assert "crosscheck_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    assert get(client, "/").find("div", cls="who").find("span").text() == "read"
    response = client.post("/logout")
    assert response.status_code == 303 and 'crosscheck_session=""' in response.headers["set-cookie"]


def test_sign_in_refuses_bad_tokens_and_foreign_redirects(fresh: tuple[TestClient, dict[str, str]]) -> None:
    client, secrets = fresh
    response = client.post("/login", data={"token": "cc_wrong", "next": "/"})
    assert response.status_code == 401 and "not valid" in parse(response.text).find("p", cls="alert").text()
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        response = client.post("/login", data={"token": secrets["read"], "next": target})
        assert response.headers["location"] == "/"


def test_without_anonymous_read_pages_send_readers_to_sign_in(anon: TestClient, info: dict[str, Any]) -> None:
    response = anon.get("/operators/scale_add?x=1")
    assert response.status_code == 303 and response.headers["location"] == "/login?next=%2Foperators%2Fscale_add%3Fx%3D1"
    anon.cookies.set("crosscheck_session", "ccs_ended_or_wrong")
    assert anon.get("/").headers["location"] == "/login?next=%2F"
    assert get(anon, "/login?next=/workers").find("input", type="hidden").attrs["value"] == "/workers"
