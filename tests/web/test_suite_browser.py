"""The suite pages in a real browser (Debian's Chromium via Playwright) at 1280 and 390 px.

Screenshots go to test-artifacts/screenshots/suite-*.png.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api
from sqlalchemy import func, select

from server.migrate import upgrade
from server.models import SuiteRunResult
from server.services import tokens
from tests.web import suite_seed
from tests.web.conftest import make_app, make_settings
from tests.web.layout import SUITE_SEED_ROUTES, layout_problems, route_of
from tests.conftest import missing_service
from tests.web.server import serve
from tests.signin import SESSION_COOKIE, session_cookie

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
WIDTHS = (1280, 390)

if not Path(CHROMIUM).exists():
    missing_service(f"{CHROMIUM} is missing: apt-get install -y chromium", module_level=True)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("suite-browser"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = suite_seed.seed(session, app.state.blobs, settings)
        info["token"] = tokens.create(session, "reader", ["read"])[1]
        info["jobs"] = dict(session.execute(select(SuiteRunResult.mode, func.max(SuiteRunResult.job_id))
                                            .where(SuiteRunResult.suite_run_id == info["second"])
                                            .group_by(SuiteRunResult.mode)).all())
        session.commit()
    with serve(app) as base:
        yield {"base": base, "app": app, **info}
    app.state.engine.dispose()


@pytest.fixture(scope="module")
def browser(live: dict[str, Any]) -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def page(request: pytest.FixtureRequest, browser: Any, live: dict[str, Any]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": request.param, "height": 900})
    context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["token"]), "url": live["base"]}])
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    pg.width = request.param
    yield pg
    context.close()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"suite-{name}-{page.width}.png"), full_page=True)


def no_sideways_scroll(page: Any) -> None:
    """No element sticks out of the viewport, none of the one-line chips wraps (wide tables become cards on
    a phone), with every <details> opened."""
    problems = layout_problems(page)
    assert not problems, (page.url, problems)


def test_suite_list_to_run_page(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/suites")
    assert page.locator("nav a[aria-current=page]").inner_text() == "Suite runs"
    runs = page.locator("table.runs tbody tr")
    assert runs.count() == 2
    assert "1 regressed" in runs.first.inner_text()
    no_sideways_scroll(page)
    shot(page, "list")
    runs.first.locator("th a").click()
    page.wait_for_url(f"**/suite-runs/{live['second']}")
    regression = page.locator("#regressions tbody tr")
    assert regression.count() == 1 and regression.first.is_visible()
    assert "crash" in regression.first.inner_text()
    assert "unverified" in page.locator("table.results").inner_text()
    no_sideways_scroll(page)
    shot(page, "run")
    page.select_option("#r-show", "failing")
    page.locator("form[aria-label='Filter results'] button[type=submit]").click()
    page.wait_for_url("**show=failing**")
    assert page.locator("table.results tbody tr").count() == 1


def test_compare_view_from_the_form(page: Any, live: dict[str, Any]) -> None:
    page.goto(f"{live['base']}/suite-runs/{live['second']}")
    page.select_option("#f-other", str(live["first"]))
    page.locator("form[aria-label='Compare with another run'] button").click()
    page.wait_for_url(f"**/suite-runs/{live['second']}/compare/{live['first']}")
    assert "alpha" in page.locator("#regressions").inner_text()
    assert "beta" in page.locator("#fixes").inner_text()
    page.locator("details.more > summary").click()
    assert page.locator("#vanished").is_visible() and "gone" in page.locator("#vanished").inner_text()
    no_sideways_scroll(page)
    shot(page, "compare")


def test_no_element_overflows_on_any_suite_page(page: Any, live: dict[str, Any]) -> None:
    first, second = live["first"], live["second"]
    visited, problems = set(), {}
    for name, path in (("list", "/suites"), ("run-first", f"/suite-runs/{first}"), ("run-second", f"/suite-runs/{second}"),
                       ("run-failing", f"/suite-runs/{second}?show=failing"), ("run-npu", f"/suite-runs/{second}?mode=npu"),
                       ("run-none", f"/suite-runs/{second}?operator=nobody"),
                       ("compare", f"/suite-runs/{second}/compare/{first}"), ("compare-back", f"/suite-runs/{first}/compare/{second}"),
                       ("compare-self", f"/suite-runs/{second}/compare/{second}"),
                       ("compare-form", f"/suite-runs?run={second}&other={first}"),
                       # what a run links to: operators with uploaded NPU results, a SIM job, an upload's job
                       ("operator-alpha", "/operators/alpha"), ("operator-gamma", "/operators/gamma"),
                       *((f"job-{mode}", f"/jobs/{job_id}") for mode, job_id in live["jobs"].items())):
        page.goto(live["base"] + path)
        visited.add(route_of(live["app"], path))
        if found := layout_problems(page):
            problems[path] = found
        shot(page, f"all-{name}")
    assert not problems, problems
    assert set(SUITE_SEED_ROUTES) <= visited
