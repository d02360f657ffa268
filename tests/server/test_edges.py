"""Issue 33's small ones, through the app on both databases: names with NUL or control characters,
500s with the security headers, safe Content-Disposition, webhook targets, sign-in throttle and
audit, dashboard sessions that are not the API token."""
from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from server.services import audit
from server.services.login_throttle import MAX_FAILURES

API = "/api/v1"
KERNEL = {"kernel.py": "import pypto\n"}


@pytest.mark.parametrize("url", [f"{API}/operators/a%00b", f"{API}/suites/a%00b", f"{API}/operators/a%00b/history",
                                 f"{API}/cases?operator=a%00b", f"{API}/suite-runs?branch=a%00b", "/operators/a%00b",
                                 f"{API}/operators?q=a%00"])
def test_a_nul_in_a_url_is_a_400_with_the_security_headers(client, hdr, url):
    r = client.get(url, headers=hdr["read"])
    assert r.status_code == 400 and "NUL" in r.json()["detail"] and r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("body, needle", [
    ({"files": KERNEL, "operator": "a\x00b"}, "operator name"),
    ({"files": KERNEL, "operator": "a\r\nb"}, "operator name"),
    ({"files": KERNEL, "labels": {"branch": "a\x00"}}, "label 'branch'"),
    ({"files": {"k\x00.py": "x"}}, "file name"),
])
def test_names_with_control_characters_are_refused(client, hdr, body, needle):
    r = client.post(f"{API}/submissions", json=body, headers=hdr["submit"])
    assert r.status_code == 422 and needle in r.json()["detail"] and "control character" in r.json()["detail"]


def test_a_suite_run_label_with_a_nul_is_refused(client, hdr):
    r = client.post(f"{API}/suite-runs", json={"suite": "s", "run_key": "k", "labels": {"branch": "a\x00"}},
                    headers=hdr["submit"])
    assert r.status_code == 422 and "control character" in r.json()["detail"]


def test_a_500_carries_the_security_headers(app):
    def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/api/v1/broken-for-test", broken)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/api/v1/broken-for-test")
    assert r.status_code == 500 and r.json()["detail"].startswith("internal server error")
    assert r.headers["x-content-type-options"] == "nosniff" and "frame-ancestors" in r.headers["content-security-policy"]


@pytest.mark.parametrize("name", ['a"b;c=d', "算子_加"])
def test_any_operator_name_gets_a_well_formed_content_disposition(client, hdr, name):
    assert client.post(f"{API}/submissions", json={"files": KERNEL, "operator": name},
                       headers=hdr["submit"]).status_code == 202
    r = client.get(f"{API}/operators/{quote(name, safe='')}/cases.csv", headers=hdr["read"])
    assert r.status_code == 200
    header = r.headers["content-disposition"]
    plain, encoded = header.split("; filename*=")
    assert plain.count('"') == 2 and ";" not in plain.removeprefix("attachment;")
    assert encoded == "UTF-8''" + quote(f"{name}-cases.csv", safe="")


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://localhost/hook", "http://[::1]/hook",
                                 "http://169.254.169.254/latest", "http://0.0.0.0/hook", "http://[::ffff:127.0.0.1]/x"])
def test_webhooks_to_this_machine_or_link_local_are_refused(client, hdr, url):
    assert client.post(f"{API}/suite-runs", json={"suite": "nightly", "run_key": "k"},
                       headers=hdr["submit"]).status_code == 201
    r = client.patch(f"{API}/suites/nightly", json={"webhook_url": url}, headers=hdr["admin"])
    assert r.status_code == 422 and "webhook_url" in r.json()["detail"]


def test_failed_sign_ins_are_audited_and_throttled(client, token, hdr):
    for _ in range(MAX_FAILURES):
        assert client.post("/login", data={"token": "cc_guess"}).status_code == 401
    r = client.post("/login", data={"token": token["read"]}, follow_redirects=False)
    assert r.status_code == 429 and "too many failed sign-ins" in r.text  # even the right token waits
    events = client.get(f"{API}/audit", params={"action": audit.LOGIN_FAILED}, headers=hdr["admin"]).json()["items"]
    assert len(events) == MAX_FAILURES and events[0]["actor"] == "anonymous"


def test_the_session_cookie_is_not_the_token_and_sign_out_ends_it(client, token):
    r = client.post("/login", data={"token": token["read"]}, follow_redirects=False)
    cookie = r.cookies["crosscheck_session"]
    assert r.status_code == 303 and cookie != token["read"] and token["read"] not in r.headers["set-cookie"]
    assert client.get(f"{API}/operators").status_code == 200
    client.post("/logout", follow_redirects=False)
    client.cookies.set("crosscheck_session", cookie)  # the cookie, kept by whoever copied it
    assert client.get(f"{API}/operators").status_code == 401
    client.cookies.clear()
    client.cookies.set("crosscheck_session", token["read"])  # the API token is no session
    assert client.get(f"{API}/operators").status_code == 401
