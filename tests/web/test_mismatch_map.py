"""The job page draws where a failed compare's mismatches are, beside the diagnosis, and nothing for a pass
(web/mismatch_chart.py, docs/dashboard.md §2)."""
from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from playwright import sync_api

from server.migrate import upgrade
from server.services import tokens
from tests.conftest import missing_service
from tests.signin import SESSION_COOKIE, session_cookie, sign_in
from tests.web import seed as seeding
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.web.layout import layout_problems
from tests.web.server import serve

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def test_the_job_page_maps_a_failed_graph_verify_and_not_a_pass(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        failed = seeding.submit_and_store(session, app.state.blobs, settings, "tiling_bug",
                                          {"sim": seeding.sim_report("tiling_bug")})[0]
        passed = seeding.submit_and_store(session, app.state.blobs, settings, "scale_add",
                                          {"sim": seeding.sim_report("scale_add")})[0]
        _, secret = tokens.create(session, "reader", ["read"])
        session.commit()
        ids = failed.id, passed.id
    with TestClient(app) as client:
        sign_in(client, secret)
        pages = [client.get(f"/jobs/{i}") for i in ids]
    app.state.engine.dispose()
    assert [p.status_code for p in pages] == [200, 200]
    lead = parse(pages[0].text).find("div", cls="evidence-lead")
    figure = lead.find("figure", cls="mismatch-map")  # next to the case's Why and Fix
    assert "rows 32–39 of 40 × all 64 columns" in figure.find("figcaption").text()
    assert "(32, 0), (32, 1)" in figure.find("span", cls="first-indices").text()
    lit = [rect.find("title").text() for rect in figure.find("g", cls="cells").find_all("rect")]
    assert lit == [f"rows {r} × columns 0–63: more than 89 % of the elements outside tolerance" for r in range(32, 40)]
    passing = parse(pages[1].text)
    assert passing.find("div", cls="ok-lead")  # graph verify passed: nothing to map
    assert not passing.find_all("figure", cls="mismatch-map") and not passing.find_all("svg", cls="mismatch")


@pytest.mark.browser
def test_the_map_fits_a_phone_and_a_desktop(tmp_path: Path) -> None:
    """In Chromium at 1280 and 390 px: nothing sticks out; screenshots to test-artifacts/screenshots/
    (docs/screenshots/job-mismatch-map-*.png are copies)."""
    if not Path(CHROMIUM).exists():
        missing_service(f"{CHROMIUM} is missing: apt-get install -y chromium")
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        job = seeding.submit_and_store(session, app.state.blobs, settings, "tiling_bug",
                                       {"sim": seeding.sim_report("tiling_bug")})[0]
        _, secret = tokens.create(session, "reader", ["read"])
        session.commit()
        job_id = job.id
    SHOTS.mkdir(parents=True, exist_ok=True)
    with serve(app) as base, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for width in (1280, 390):
                context = browser.new_context(viewport={"width": width, "height": 900})
                context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(base, secret), "url": base}])
                page = context.new_page()
                page.goto(f"{base}/jobs/{job_id}")
                figure = page.locator("figure.mismatch-map")
                assert figure.locator("rect.lv9").count() == 8
                box = figure.locator("svg").bounding_box()
                assert box is not None and box["width"] <= width and box["height"] > 100, box
                assert layout_problems(page) == {}, width
                figure.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"job-mismatch-map-{width}.png"))
                context.close()
        finally:
            browser.close()
    app.state.engine.dispose()
