"""Every page of the every-verdict seed (tests/web/crawl_seed.py) in Chromium at 390 px: nothing sticks out,
nothing wraps that must not, no cell of a cases or results table is cut off (element boxes, tests/web/layout.py).
That includes the seed's precision drift (suite run and operator pages, with the trend chart), performance
regressions and culprits, which must be on the pages checked (layout.SEEDED_SECTIONS).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api
from sqlalchemy import select

from server.migrate import upgrade
from server.models import Job, Operator, SuiteRun
from server.services import tokens
from tests.conftest import missing_service
from tests.web import crawl_seed
from tests.web.conftest import make_app, make_settings
from tests.web.layout import SEEDED_SECTIONS, dashboard_routes, layout_problems, route_of
from tests.web.server import serve
from tests.signin import SESSION_COOKIE, session_cookie

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PHONE = {"width": 390, "height": 844}

if not Path(CHROMIUM).exists():
    missing_service(f"{CHROMIUM} is missing: apt-get install -y chromium", module_level=True)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("crawl-browser"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = crawl_seed.seed(session, app.state.blobs, settings)
        info["admin"] = tokens.create(session, "crawler", ["read", "submit", "admin"])[1]
        session.commit()
        pages = (["/", "/coverage", "/submit", "/submit?mode=npu", "/workers", "/suites", "/audit"]
                 + [f"/jobs/{i}" for i in session.scalars(select(Job.id))]
                 + [f"/operators/{n}" for n in session.scalars(select(Operator.name))]
                 + [f"/cases?operator={n}" for n in session.scalars(select(Operator.name))]
                 + [f"/suite-runs/{i}" for i in session.scalars(select(SuiteRun.id))])
    suite = info["suite"]
    pages.append(f"/suite-runs/{suite['second']}/compare/{suite['first']}")
    pages.append("/benchmarks/nightly")  # the seed's suite, as operators × runs
    with serve(app) as base:
        yield {"base": base, "app": app, "pages": pages, **info}


def test_every_page_of_every_verdict_fits_a_phone(live: dict[str, Any]) -> None:
    problems, visited, shown = {}, set(), set()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport=PHONE)
        context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["admin"]), "url": live["base"]}])
        page = context.new_page()
        page.set_default_timeout(10_000)
        for path in live["pages"]:
            response = page.goto(live["base"] + path)
            assert response is not None and response.status == 200, path
            route = route_of(live["app"], path)
            visited.add(route)
            shown |= {name for name, (at, css) in SEEDED_SECTIONS.items()
                      if at == route and name not in shown and page.locator(css).count()}
            if found := layout_problems(page):
                problems[path] = found
        browser.close()
    assert not problems, json.dumps(problems, indent=1)
    assert {str(r.path) for r in dashboard_routes(live["app"])} - visited <= {"/login", "/suite-runs"}
    assert set(SEEDED_SECTIONS) - shown == set(), "the seed's drift, perf and culprit sections were not checked"
