"""Culprits on the server (POST /suite-runs/{id}/culprits): stored per (run, operator), validated,
idempotent, in the run's JSON and page, and announced by a `suite_run.culprits` webhook."""
from __future__ import annotations

import json

import pytest

from server.services import webhooks
from tests.server.suites import SuiteDriver, scale_add, sim_report
from tests.server.test_webhooks import SECRET, Receiver, regressed_run
from tests.server.test_webhooks import settings  # noqa: F401 - the receiver on this host is allowed

SHA = "3f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
OTHER = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def ci(client, hdr) -> SuiteDriver:
    driver = SuiteDriver(client, hdr)
    driver.heartbeat()
    return driver


def post(ci: SuiteDriver, run_id: int, items: list[dict[str, str]], who: str = "submit"):
    return ci.client.post(f"/api/v1/suite-runs/{run_id}/culprits", headers=ci.hdr[who], json={"items": items})


def test_a_culprit_is_stored_once_and_shown_with_its_regression(ci):
    with Receiver([]) as receiver:
        run = regressed_run(ci, receiver.url)
        item = {"operator": "alpha", "commit": SHA, "subject": "alpha: a faster scale", "metric": "verdict"}
        r = post(ci, run["id"], [item])
        assert r.status_code == 200, r.text
        assert [(c["operator"], c["commit"], c["subject"]) for c in r.json()["items"]] == \
            [("alpha", SHA, "alpha: a faster scale")]
        assert post(ci, run["id"], [item]).status_code == 200  # a retried call changes nothing
        got = ci.get(f"/suite-runs/{run['id']}")
        assert [(c["operator"], c["commit"], c["metric"]) for c in got["culprits"]] == [("alpha", SHA, "verdict")]
        events = [d["event"] for d in ci.get(f"/suite-runs/{run['id']}/webhooks")["items"]]
        assert events.count(webhooks.EVENT_CULPRITS) == 1 and webhooks.EVENT_REGRESSIONS in events

        app = ci.client.app
        with webhooks.new_http(app.state.settings) as http:
            webhooks.deliver_due(app.state.sessionmaker, app.state.settings, http)
        bodies = {h["X-Crosscheck-Event"]: json.loads(b) for h, b in receiver.received}
        sent = bodies[webhooks.EVENT_CULPRITS]
        assert sent["culprits"] == [{"operator": "alpha", "commit": SHA, "subject": "alpha: a faster scale",
                                     "metric": "verdict"}]
        assert sent["regressions"] and {c["operator"] for c in sent["regressions"]} == {"alpha"}
        assert sent["suite_run"]["id"] == run["id"]
        assert all(h["X-Crosscheck-Signature"] == webhooks.signature(SECRET, b) for h, b in receiver.received)

    page = ci.client.get(f"/suite-runs/{run['id']}", headers=ci.hdr["read"]).text
    regressions = page.split('id="regressions"')[1].split("</table>")[0]
    assert f'<code title="{SHA}">{SHA[:10]}</code>' in regressions and "alpha: a faster scale" in regressions


def test_another_commit_replaces_the_culprit_and_is_announced_again(ci):
    run = regressed_run(ci, "http://127.0.0.1:9/hook")
    assert post(ci, run["id"], [{"operator": "alpha", "commit": SHA}]).status_code == 200
    r = post(ci, run["id"], [{"operator": "alpha", "commit": OTHER.upper(), "subject": "  two\n words ",
                              "metric": "aicore_us"}])
    assert r.status_code == 200, r.text
    assert [(c["commit"], c["subject"], c["metric"]) for c in r.json()["items"]] == [(OTHER, "two words", "aicore_us")]
    events = [d["event"] for d in ci.get(f"/suite-runs/{run['id']}/webhooks")["items"]]
    assert events.count(webhooks.EVENT_CULPRITS) == 2
    assert len(ci.get(f"/suite-runs/{run['id']}/culprits")["items"]) == 1


@pytest.mark.parametrize(("items", "says"), [
    ([{"operator": "nosuch", "commit": SHA}], "has no operator 'nosuch'"),
    ([{"operator": "alpha", "commit": "not-a-sha!"}], "7-64 hex digits"),
    ([{"operator": "alpha", "commit": "abc"}], "items.0.commit"),
    ([{"operator": "alpha", "commit": SHA, "metric": "cycles"}], "items.0.metric"),
    ([{"operator": "alpha", "commit": SHA}, {"operator": "alpha", "commit": OTHER}], "named twice"),
    ([], "items"),
])
def test_bad_culprits_are_refused_and_store_nothing(ci, items, says):
    files = scale_add()
    run = ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, reuse=False)
    r = post(ci, run["id"], items)
    assert r.status_code == 422 and says in r.json()["detail"], r.text
    assert ci.get(f"/suite-runs/{run['id']}")["culprits"] == []


def test_culprits_of_an_unknown_run_or_anothers_run_are_refused(ci):
    assert post(ci, 999_999, [{"operator": "alpha", "commit": SHA}]).status_code == 404
    files = scale_add()
    run = ci.run_suite({"alpha": (files, sim_report(files, "alpha"))}, reuse=False)
    assert post(ci, run["id"], [{"operator": "alpha", "commit": SHA}], who="read").status_code == 403
    assert post(ci, run["id"], [{"operator": "alpha", "commit": SHA}], who="admin").status_code == 200
