"""Real operators' pages in Chromium (issue 35): the main seed, the suite seed and real-operator-shaped results
(tests/web/realops_seed.py: the gym's long paths, a fixture that cannot be supplied, an NPU-only golden, a
degenerate compare, the four outcomes). The overview, an operator, its job and a suite run at 1280 and 390 px:
no page scrolls sideways on a phone, each operator's outcome reads the same word on each page, and the
operator page opens on its diagnosis and fix, within the first screen.

Screenshots go to test-artifacts/screenshots/realops/; docs/dashboard.md's are made with
`SCREENSHOTS=docs/screenshots` set (docs/dashboard.md §8).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api

from runtime import vocabulary
from server.migrate import upgrade
from server.services import tokens
from tests.conftest import missing_service
from tests.signin import SESSION_COOKIE, session_cookie
from tests.web import realops_seed, suite_seed
from tests.web import seed as main_seed
from tests.web.conftest import make_app, make_settings
from tests.web.layout import layout_problems
from tests.web.server import serve

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")  # Debian's; another build by its path
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / os.environ.get("SCREENSHOTS", "test-artifacts/screenshots/realops")
WIDTHS = (1280, 390)
FIRST_SCREEN = 800  # px: a laptop's first screen below the browser's own bars
PHONE_SCREEN = 844  # px: a 390 px phone's screen

if not Path(CHROMIUM).exists():
    missing_service(f"{CHROMIUM} is missing: apt-get install -y chromium", module_level=True)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("realops-browser"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = main_seed.seed(session, app.state.blobs, settings)
        info["suite"] = suite_seed.seed(session, app.state.blobs, settings)
        info["realops"] = realops_seed.add(session, app.state.blobs, settings)
        info["reader"] = tokens.create(session, "reader", ["read"])[1]
        session.commit()
    with serve(app) as base:
        yield {"base": base, **info}
    app.state.engine.dispose()


def pages(live: dict[str, Any]) -> dict[str, str]:
    return {"overview": "/", "operator": "/operators/gated_delta_rule",
            "job": f"/jobs/{live['realops']['gated_delta_rule']}", "suite": f"/suite-runs/{live['suite']['second']}"}


@pytest.fixture(scope="module")
def browser(live: dict[str, Any]) -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_page(browser: Any, live: dict[str, Any], width: int) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["reader"]),
                          "url": live["base"]}])
    page = context.new_page()
    page.set_default_timeout(10_000)
    return page


@pytest.mark.parametrize("width", WIDTHS)
def test_real_operators_pages_fit_and_are_photographed(browser: Any, live: dict[str, Any], width: int) -> None:
    page = open_page(browser, live, width)
    SHOTS.mkdir(parents=True, exist_ok=True)
    wide = {}
    for name, path in pages(live).items():
        response = page.goto(live["base"] + path)
        assert response is not None and response.status == 200, path
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        if name == "overview":  # the filters never push the first operator off a phone's first screen
            top = page.locator("tbody.op").first.bounding_box()
            assert top is not None and top["y"] < PHONE_SCREEN, top
        scroll = page.evaluate("() => document.scrollingElement.scrollWidth")
        if scroll > width:
            wide[path] = {"scrollWidth": scroll, **layout_problems(page)}
    page.context.close()
    assert not wide, f"pages scroll sideways at {width} px: {wide}"


def test_each_operator_reads_one_outcome_on_every_page(browser: Any, live: dict[str, Any]) -> None:
    verdicts = realops_seed.VERDICTS
    assert verdicts["mla_prolog"] == verdicts["moe_gating"] == "not_judged"  # issue 35: not "structural error"
    assert vocabulary.label("not_judged") == "not judged here"
    page = open_page(browser, live, 390)
    page.goto(live["base"] + "/")
    for operator, outcome in realops_seed.OUTCOMES.items():
        row = page.locator(f'tbody.op[data-operator="{operator}"]')
        assert row.get_attribute("data-outcome") == outcome, operator
        sync_api.expect(row.locator(".outcome").first).to_have_text(vocabulary.WORDS[outcome])
        # the verdict beside it (a flag may lead it) agrees: a test that never ran is not judged, no structural error
        sync_api.expect(row.locator("td.combined .verdict")).to_contain_text(vocabulary.label(verdicts[operator]))
    for operator, outcome in realops_seed.OUTCOMES.items():
        page.goto(f"{live['base']}/operators/{operator}")
        sync_api.expect(page.locator("h1 .outcome")).to_have_text(vocabulary.WORDS[outcome])
        sync_api.expect(page.locator("h1 .verdict")).to_contain_text(vocabulary.label(verdicts[operator]))
        words = set(page.locator("table.cases .outcome").all_inner_texts())
        assert words <= set(vocabulary.WORDS.values()) and vocabulary.WORDS[outcome] in words, (operator, words)
        page.goto(f"{live['base']}/jobs/{live['realops'][operator]}")
        words = set(page.locator(".outcome").all_inner_texts())
        assert vocabulary.WORDS[outcome] in words and words <= set(vocabulary.WORDS.values()), (operator, words)
    page.context.close()


def test_the_operator_page_opens_on_its_diagnosis_and_fix(browser: Any, live: dict[str, Any]) -> None:
    page = open_page(browser, live, 1280)
    page.goto(live["base"] + "/operators/gated_delta_rule")
    for what in ("#h-diagnosis", "#diagnosis .fix"):
        box = page.locator(what).first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= FIRST_SCREEN, (what, box)
    # swiglu's three cases share one diagnosis: said once, naming the three.
    page.goto(live["base"] + "/operators/swiglu")
    sync_api.expect(page.locator("#diagnosis .diagnosis-group")).to_have_count(1)
    sync_api.expect(page.locator("#diagnosis .diagnosis-group .case-name")).to_have_count(3)
    page.context.close()
