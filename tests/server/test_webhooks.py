"""Webhooks on regressions: retries with backoff against a local HTTP server, and the delivery log."""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from server.models.base import utcnow
from server.services import webhooks
from tests.server.suites import SuiteDriver, scale_add, sim_report

C1 = "scale_add_32x64"
SECRET = "s3cret"


class Receiver:
    """A local HTTP server that answers each POST with the next planned status code."""

    def __init__(self, codes: list[int]):
        self.codes, self.received = list(codes), []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                code = receiver.codes.pop(0) if receiver.codes else 200
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"ok" if code < 300 else b"try later")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/crosscheck"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def settings(settings):
    """The receiver listens on this host: allowed here only (server/services/webhook_targets.py)."""
    return settings.model_copy(update={"webhook_allow_loopback": True})


@pytest.fixture
def ci(client, hdr) -> SuiteDriver:
    driver = SuiteDriver(client, hdr)
    driver.heartbeat()
    return driver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver([500, 503, 200]) as r:
        yield r


def regressed_run(ci: SuiteDriver, url: str) -> dict[str, Any]:
    files = scale_add()
    ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, reuse=False)
    r = ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["admin"],
                        json={"webhook_url": url, "webhook_secret": SECRET})
    assert r.status_code == 200 and r.json()["webhook_configured"] and "webhook_url" not in r.json()
    return ci.run_suite({"alpha": (files, sim_report(files, "alpha", verdicts={C1: "crash"}))}, reuse=False)


def test_the_webhook_retries_with_backoff_until_delivered(ci, app, receiver):
    run = regressed_run(ci, receiver.url)
    settings, maker = app.state.settings, app.state.sessionmaker
    t0 = utcnow()
    with webhooks.new_http(settings) as http:
        assert [s for _, s in webhooks.deliver_due(maker, settings, http, now=t0)] == ["pending"]
        first_wait = webhooks.backoff_s(settings, 1)
        assert webhooks.deliver_due(maker, settings, http, now=t0 + timedelta(seconds=first_wait - 1)) == []
        t1 = t0 + timedelta(seconds=first_wait)
        assert [s for _, s in webhooks.deliver_due(maker, settings, http, now=t1)] == ["pending"]
        second_wait = webhooks.backoff_s(settings, 2)
        assert second_wait == 2 * first_wait
        assert webhooks.deliver_due(maker, settings, http, now=t1 + timedelta(seconds=second_wait - 1)) == []
        assert [s for _, s in webhooks.deliver_due(maker, settings, http, now=t1 + timedelta(seconds=second_wait))
                ] == ["delivered"]
        assert webhooks.deliver_due(maker, settings, http, now=t1 + timedelta(days=1)) == []
    assert len(receiver.received) == 3
    headers, body = receiver.received[-1]
    assert headers["X-Crosscheck-Signature"] == "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    payload = json.loads(body)
    assert payload["event"] == "suite_run.regressions" and payload["suite"] == "nightly"
    assert payload["suite_run"]["id"] == run["id"] and payload["counts"]["regressions"] == 1
    assert [(c["operator"], c["case"], c["after"]) for c in payload["regressions"]] == [("alpha", C1, "crash")]
    log = ci.get(f"/suite-runs/{run['id']}/webhooks")["items"]
    assert len(log) == 1 and log[0]["status"] == "delivered" and log[0]["attempts"] == 3
    assert [a["status_code"] for a in log[0]["log"]] == [500, 503, 200]
    assert "HTTP 500" in log[0]["log"][0]["error"] and log[0]["log"][2]["error"] is None
    assert "try later" not in json.dumps(log)  # the receiver's answer is not shown to readers


def test_the_webhook_gives_up_after_the_last_attempt(ci, app):
    settings = app.state.settings.model_copy(update={"webhook_max_attempts": 2})
    with Receiver([500, 500, 500]) as receiver:
        run = regressed_run(ci, receiver.url)
        with webhooks.new_http(settings) as http:
            t0 = utcnow()
            webhooks.deliver_due(app.state.sessionmaker, settings, http, now=t0)
            later = t0 + timedelta(seconds=webhooks.backoff_s(settings, 1))
            assert [s for _, s in webhooks.deliver_due(app.state.sessionmaker, settings, http, now=later)] == ["failed"]
            assert webhooks.deliver_due(app.state.sessionmaker, settings, http, now=later + timedelta(days=1)) == []
    (delivery,) = ci.get(f"/suite-runs/{run['id']}/webhooks")["items"]
    assert delivery["status"] == "failed" and delivery["attempts"] == 2


def test_an_unreachable_receiver_is_logged_and_retried(ci, app):
    with Receiver([]) as receiver:
        url = receiver.url
    run = regressed_run(ci, url)  # the receiver is gone: connection refused
    with webhooks.new_http(app.state.settings) as http:
        assert [s for _, s in webhooks.deliver_due(app.state.sessionmaker, app.state.settings, http)] == ["pending"]
    (delivery,) = ci.get(f"/suite-runs/{run['id']}/webhooks")["items"]
    assert delivery["last_status_code"] is None and "ConnectError" in delivery["last_error"]


def test_no_regression_sends_nothing(ci, receiver):
    files = scale_add()
    ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, reuse=False)
    ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["admin"], json={"webhook_url": receiver.url})
    run = ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, reuse=False)
    assert ci.get(f"/suite-runs/{run['id']}/webhooks")["items"] == []


def test_a_bad_webhook_url_is_refused(ci):
    ci.open()
    r = ci.client.patch("/api/v1/suites/nightly", headers=ci.hdr["admin"], json={"webhook_url": "file:///etc/passwd"})
    assert r.status_code == 422 and "http(s)" in r.json()["detail"]
