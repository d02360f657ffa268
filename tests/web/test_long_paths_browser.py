"""A real operator's long paths wrap at 390 px (issue 35: job pages scrolled sideways to 433-601 px): an error,
a lint finding and a diagnosis at file:line deep in a CI checkout, and every page that shows them.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api

from server.migrate import upgrade
from server.services import tokens
from tests.conftest import missing_service
from tests.signin import SESSION_COOKIE, session_cookie
from tests.web import seed as main_seed
from tests.web.conftest import make_app, make_settings
from tests.web.layout import layout_problems
from tests.web.server import serve

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
# As a gym checkout's paths read in a CI runner's workspace: no space to break at.
DEEP = ("/builds/kernels-team/pypto-gym-models/src/pypto_gym/ops/pypto_tile/attention/gated_delta_rule/"
        "gated_delta_rule_chunked_forward_impl.py")

if not Path(CHROMIUM).exists():
    missing_service(f"{CHROMIUM} is missing: apt-get install -y chromium", module_level=True)


def long_report() -> dict[str, Any]:
    report = main_seed.sim_report("scale_add", "gated_delta_rule_chunked_forward_with_a_long_operator_name")
    report["lint"] = [{"rule": "unused-tile", "severity": "warning", "file": DEEP, "line": 412,
                       "message": f"a tile declared at {DEEP}:400 is never read"}]
    for case in report["cases"]:
        case.update(verdict="structural_error", structural="error", stage="sim", graph_verify=None)
        case["error"] = {"type": "RuntimeError", "message": f"while compiling {DEEP}: vec tile shape not set",
                         "file": DEEP, "line": 412, "traceback": ""}
        case["diagnosis"] = [{"rule": "vec-tile-shape-not-set", "cause": f"no vec tile shape in {DEEP}",
                              "fix": "set it", "sim_only": False, "stage": "sim", "file": DEEP, "line": 412}]
    return report


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("long-paths"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        report = long_report()
        [job] = main_seed.submit_and_store(session, app.state.blobs, settings, "scale_add", {"sim": report},
                                           operator=report["cases"][0]["operator"])
        secret = tokens.create(session, "reader", ["read"])[1]
        session.commit()
        job_id = job.id
    with serve(app) as base:
        yield {"base": base, "token": secret, "job": job_id, "operator": report["cases"][0]["operator"]}
    app.state.engine.dispose()


def test_long_paths_wrap_at_390_px(live: dict[str, Any]) -> None:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 390, "height": 900})
        context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["token"]),
                              "url": live["base"]}])
        page = context.new_page()
        page.set_default_timeout(10_000)
        problems = {}
        for path in (f"/jobs/{live['job']}", f"/operators/{live['operator']}", "/"):
            page.goto(live["base"] + path)
            assert DEEP.rsplit("/", 1)[1] in page.content() or not path.startswith("/jobs/")
            if found := layout_problems(page):
                problems[path] = found
        browser.close()
    assert not problems, json.dumps(problems, indent=1)
