"""Real-browser tests: Debian's Chromium driven by Playwright against the app served by uvicorn.

Screenshots of every page at 1280 and 390 px go to test-artifacts/screenshots/.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api

from server.migrate import upgrade
from server.services import audit, tokens
from tests.web import seed as seeding
from tests.web.layout import SUITE_SEED_ROUTES, dashboard_routes, layout_problems, route_of
from tests.web.conftest import make_app, make_settings
from tests.conftest import missing_service
from tests.e2e.conftest import descendants
from tests.leftovers import remove_dirs_of
from tests.web.server import serve
from tests.signin import SESSION_COOKIE, session_cookie

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
WIDTHS = (1280, 390)
JOB_FINISH_TIMEOUT_S = 240.0
WORKER_STOP_S = 20.0

if not Path(CHROMIUM).exists():
    missing_service(f"{CHROMIUM} is missing: apt-get install -y chromium", module_level=True)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The seeded app on a free port, with a submit token and a worker token."""
    data = tmp_path_factory.mktemp("browser-data")
    settings = make_settings(data)
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = seeding.seed(session, app.state.blobs, settings)
        seeding.seed_many_cases(session, app.state.blobs, settings)
        info["worker_token"] = tokens.create(session, "browser-test-worker", ["worker"])[1]
        info["admin_token"] = tokens.create(session, "browser-test-admin", ["read", "admin"])[1]
        for action, target in ((audit.SUBMIT, f"job {info['flag_jobs'][0].id}"), (audit.CARD_RELEASE, "worker " + "w" * 150),
                               (audit.TOKEN_CREATE, "token " + seeding.LONG_NAME)):
            audit.record(session, "browser-test-admin", action, target, card=3, note="x" * 120)
        session.commit()
    with serve(app) as base:
        yield {"base": base, "settings": settings, "data": data, "app": app, **info}


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
    page.screenshot(path=str(SHOTS / f"{name}-{page.width}.png"), full_page=True)


def test_overview_shows_the_flag(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/")
    flagged = page.locator('tbody.op[data-verdict="sim_garbage_npu_ok"]')
    sync_api.expect(flagged.locator(".flag-note")).to_contain_text("not a kernel defect")
    sync_api.expect(flagged.locator(".garbage").first).to_have_text("10^35 · SIM garbage (NaN ×16,384)")  # one rendering, NaN count included
    # Real defects come first.
    assert page.locator("tbody.op").first.get_attribute("data-verdict") == "kernel_defect"
    # JavaScript shows timestamps in local time (the server's UTC text stays in the title).
    when = page.locator("time[data-local]").first
    assert "UTC" not in when.inner_text() and "UTC" in when.get_attribute("title")
    assert flagged.locator("table.cases").count() == 0  # the page carries no case table: opening fetches it
    flagged.locator("summary").click()
    sync_api.expect(flagged.locator("table.cases")).to_be_visible()
    sync_api.expect(flagged.locator("details.op-cases")).to_have_attribute("data-loaded", "yes")
    shot(page, "overview")


def test_filter(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/")
    page.get_by_label("Verdict", exact=True).select_option("kernel_defect")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"verdict=kernel_defect"))
    assert page.locator("tbody.op").count() == 2
    chip = page.locator("nav.counts a[data-outcome=failed]")  # the outcome chips (runtime/vocabulary.py)
    defects = int(chip.locator("span.n").inner_text())
    chip.click()
    page.wait_for_url(re.compile(r"outcome=failed"))
    sync_api.expect(page.locator("tbody.op")).to_have_count(defects)
    sync_api.expect(page.locator("tbody.op[data-outcome=failed]")).to_have_count(defects)
    page.get_by_label("Search", exact=True).fill("no-such-operator")
    page.keyboard.press("Enter")
    sync_api.expect(page.locator(".empty")).to_contain_text("No operator matches")
    shot(page, "overview-filtered-empty")


def test_click_through_to_a_diagnosis_card(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/")
    page.locator('tbody.op[data-operator="missing_vec_tiles"] > tr > th a').click()
    page.wait_for_url(re.compile(r"/operators/missing_vec_tiles$"))
    shot(page, "operator-structural")
    page.locator("table.cases tbody th a").first.click()
    page.wait_for_url(re.compile(r"/jobs/\d+#case-"))
    card = page.locator("article.diag").first
    sync_api.expect(card).to_be_visible()
    # One excerpt per page: the lint finding above shows the line, the card points back to it.
    sync_api.expect(card.locator(".footnote")).to_contain_text("line 18")
    sync_api.expect(page.locator("article.lint .ln.hit")).to_contain_text("out[:] = x * 2.0 + y")
    page.locator("details.log summary").nth(1).click()  # stderr opens with a click
    sync_api.expect(page.locator("details.log").nth(1).locator("pre")).to_be_visible()
    shot(page, "job-diagnosis")


def test_history_chart_renders(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/operators/scale_add")
    chart = page.locator("svg#history-chart")
    sync_api.expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100
    sync_api.expect(chart.locator('g[data-series="NPU"] circle')).to_have_count(2)
    sync_api.expect(chart.locator("g.tolerance text")).to_have_text("atol 0.001")  # a flat line has no height
    shot(page, "operator")


def test_per_case_charts_two_columns_wide_one_on_a_phone(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/operators/many_cases_op")
    figures = page.locator("figure.case-chart")
    sync_api.expect(figures).to_have_count(12)
    boxes = [figures.nth(i).bounding_box() for i in range(12)]
    assert all(b and b["x"] >= 0 and b["x"] + b["width"] <= page.width and b["height"] > 100 for b in boxes)
    first, second = boxes[0], boxes[1]
    if page.width == 1280:  # side by side, each chart at least half the main chart's width
        assert abs(first["y"] - second["y"]) < 2 and second["x"] > first["x"] + first["width"]
        assert first["width"] > 500
    else:  # one column
        assert abs(first["x"] - second["x"]) < 2 and second["y"] >= first["y"] + first["height"]
    sync_api.expect(figures.first.locator("svg g[data-series=NPU] circle")).to_have_count(3)
    sync_api.expect(page.locator("p.more-cases")).to_contain_text("2 more cases not drawn")
    shot(page, "operator-per-case")
    page.locator("p.more-cases a").first.click()
    page.wait_for_url(re.compile(r"\?case=many_cases_op_case_"))
    sync_api.expect(page.locator("h2#h-hist")).to_contain_text("of case many_cases_op_case_")
    sync_api.expect(page.locator("figure.case-chart")).to_have_count(0)
    sync_api.expect(page.locator("svg#history-chart g[data-series=NPU] circle")).to_have_count(3)
    shot(page, "operator-one-case")
    page.get_by_role("link", name="← all cases").click()
    page.wait_for_url(re.compile(r"/operators/many_cases_op\?$"))
    sync_api.expect(page.locator("figure.case-chart")).to_have_count(12)


def test_job_page_timeline_and_other_pages(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + f"/jobs/{live['flag_jobs'][0].id}")
    sync_api.expect(page.locator("svg.lanes rect").first).to_be_visible()
    shot(page, "job-flag")
    for name, path in (("workers", "/workers"), ("submit", "/submit"), ("suites", "/suites"),
                       ("error-404", "/jobs/999999"), ("job-queued", f"/jobs/{live['queued_jobs'][0].id}")):
        page.goto(live["base"] + path)
        shot(page, name)
    page.context.clear_cookies()
    page.goto(live["base"] + "/")
    page.wait_for_url(re.compile(r"/login\?next="))
    shot(page, "login")


def test_keyboard_reaches_the_filters(page: Any, live: dict[str, Any]) -> None:
    page.goto(live["base"] + "/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "f-q":
            break
    assert page.evaluate("document.activeElement.id") == "f-q"


@pytest.fixture(scope="module")
def sim_worker(live: dict[str, Any]) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery SIM worker on the app's embedded broker, talking to the served API."""
    settings = live["settings"]
    env = {**os.environ, "DATA_DIR": str(live["data"]), "BROKER_URL": settings.resolved_broker_url,
           "API_URL": live["base"], "WORKER_TOKEN": live["worker_token"], "JOB_HEARTBEAT_S": "2"}
    log = open(live["data"] / "worker.log", "wb")  # noqa: SIM115 - open for the worker's life; a file, not a pipe
    proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "worker.app", "worker", "-Q", "sim",
                             "--concurrency", "1", "--loglevel", "INFO"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    yield proc
    # Stopped as `docker stop` and `crosscheck up` stop it: SIGTERM to Celery's main process. A SIGTERM to the
    # whole group made Celery start a new pool process while shutting down, and kill it, scratch and all.
    tree = {proc.pid, *descendants(proc.pid)}
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=WORKER_STOP_S)
    except subprocess.TimeoutExpired:
        tree |= set(descendants(proc.pid))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        remove_dirs_of(tree)
    log.close()


@pytest.mark.slow  # the worker compiles the example with pypto
def test_upload_an_example_and_watch_it_finish(browser: Any, live: dict[str, Any], sim_worker: Any,
                                               tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["token"]), "url": live["base"]}])
    page = context.new_page()
    page.width = 1280
    upload = tmp_path / "scale_add.zip"
    upload.write_bytes(seeding.bundle("scale_add"))
    page.goto(live["base"] + "/submit")
    page.get_by_label("Package or script").set_input_files(str(upload))
    page.locator("summary", has_text="Name, cases and labels").click()
    page.get_by_label("Operator name").fill("uploaded_scale_add")
    page.get_by_role("button", name="Submit").click()
    progress = page.locator("#submit-progress")
    sync_api.expect(progress).to_be_visible()
    sync_api.expect(page.locator("#submit-jobs li")).to_have_count(1)
    shot(page, "submit-progress")
    # A second tab on the job page follows the job by itself (fetch, then a reload when it ends).
    follower = context.new_page()
    follower.goto(live["base"] + page.locator("#submit-jobs li a").get_attribute("href"))
    seen = set()
    deadline = time.monotonic() + JOB_FINISH_TIMEOUT_S
    while "/jobs/" not in page.url:
        if time.monotonic() > deadline:
            worker_log = (live["data"] / "worker.log").read_text(errors="replace")[-3000:]
            pytest.fail(f"the job did not finish in {JOB_FINISH_TIMEOUT_S:.0f} s; states {seen}\n{worker_log}")
        try:
            seen.add(page.locator("#submit-jobs .job-state").first.inner_text(timeout=1000))
        except sync_api.Error:
            pass  # the page is navigating to the results
        time.sleep(0.3)
    page.wait_for_load_state()
    sync_api.expect(page.locator("#job-status")).to_have_text("acceptable")
    sync_api.expect(page.locator("table.cases tbody tr")).to_have_count(2)
    sync_api.expect(page.locator("svg.lanes").first).to_be_visible()
    shot(page, "job-uploaded")
    sync_api.expect(follower.locator("#job-status")).to_have_text("acceptable", timeout=30_000)
    sync_api.expect(follower.locator("#live")).to_have_count(0)
    context.close()


def every_page(live: dict[str, Any]) -> list[tuple[str, str]]:
    """Every page a reader sees with the main seed (admin pages and the signed-out ones come after)."""
    jobs = {name: live[key][0].id for name, key in (("flag", "flag_jobs"), ("structural", "structural_jobs"),
                                                    ("fake", "fake_jobs"), ("partial", "partial_jobs"),
                                                    ("queued", "queued_jobs"), ("npu-waiting", "npu_waiting_jobs"))}
    operators = ("scale_add", "softmax_partial", "wrong_maths", "golden_fallback", "missing_vec_tiles",
                 "relu_like", seeding.LONG_NAME, "many_cases_op", "scale_add?case=scale_add_32x64",
                 "many_cases_op?case=many_cases_op_case_00&range=90d")
    return ([("overview", "/"), ("overview-filtered", "/?verdict=kernel_defect&q=a"), ("coverage", "/coverage"),
             ("workers", "/workers"), ("submit", "/submit"), ("suites", "/suites"),
             ("suites-filtered", "/suites?suite=nightly&branch=main&since=7d"),
             ("error-404", "/jobs/999999"), ("error-404-unknown-url", "/no/such/page"),
             ("error-403", "/audit"), ("error-422", "/suites?since=forever"),
             ("error-422-compare-form", "/suite-runs?run=0&other=0"), ("error-404-suite-run", "/suite-runs/999999"),
             ("error-404-compare", "/suite-runs/999999/compare/1"), ("error-404-benchmark", "/benchmarks/no-such-suite"),
             ("error-404-operator", "/operators/" + "no_such_operator_" * 8)]
            + [(f"operator-{i}", f"/operators/{name}") for i, name in enumerate(operators)]
            + [(f"cases-{i}", f"/cases?operator={name}") for i, name in enumerate(("scale_add", seeding.LONG_NAME))]
            + [(f"job-{name}", f"/jobs/{job_id}") for name, job_id in jobs.items()])


ADMIN_PAGES = (("audit", "/audit"), ("audit-filtered", "/audit?action=card.release"), ("workers-admin", "/workers"))
SIGNED_OUT_PAGES = (("login", "/login?next=%2Fjobs%2F1"),)


def test_no_element_overflows_the_viewport_on_any_page(page: Any, live: dict[str, Any]) -> None:
    problems, visited = {}, set()

    def check(name: str, path: str) -> None:
        page.goto(live["base"] + path)
        visited.add(route_of(live["app"], path))
        found = layout_problems(page)
        if found:
            problems[f"{name} {path}"] = found
        shot(page, f"all-{name}")

    for name, path in every_page(live):
        check(name, path)
    page.context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["admin_token"]), "url": live["base"]}])
    for name, path in ADMIN_PAGES:
        check(name, path)
    page.context.clear_cookies()
    for name, path in SIGNED_OUT_PAGES:
        check(name, path)
    page.get_by_label("API token").fill("not-a-token " * 8)  # the refusal, on the same page
    page.locator("form button[type=submit]").click()
    sync_api.expect(page.locator(".error, [role=alert]").first).to_be_visible()
    if found := layout_problems(page):
        problems["login refused"] = found
    shot(page, "all-login-refused")
    assert not problems, json.dumps(problems, indent=1)
    # Every page web/ serves is checked here or, for a suite run's pages, in test_suite_browser.py.
    assert {str(r.path) for r in dashboard_routes(live["app"])} - visited - set(SUITE_SEED_ROUTES) == set()


FITS_JS = """(sel) => { const t = document.querySelector(sel);
    return t.parentElement.scrollWidth <= t.parentElement.clientWidth + 1; }"""


def test_wide_tables_are_not_clipped_at_1280(page: Any, live: dict[str, Any]) -> None:
    if page.width != 1280:
        pytest.skip("the wide layout")
    for name in ("softmax_partial", "golden_fallback", seeding.LONG_NAME):
        page.goto(live["base"] + f"/operators/{name}")
        # the Why column is on screen, not behind a sideways scroll
        assert page.evaluate(FITS_JS, "section[aria-labelledby=h-cases] table.cases"), name
    page.goto(live["base"] + "/")
    assert page.evaluate(FITS_JS, "table.matrix")  # every column of the overview, Updated included


def test_combined_verdict_is_in_view_on_a_phone(page: Any, live: dict[str, Any]) -> None:
    if page.width != 390:
        pytest.skip("the phone layout")
    page.goto(live["base"] + "/")
    verdict = page.locator("tbody.op").first.locator("td.combined .verdict")
    box = verdict.bounding_box()
    assert box and 0 <= box["x"] and box["x"] + box["width"] <= 390 and box["y"] < 900
    page.goto(live["base"] + f"/jobs/{live['partial_jobs'][0].id}")
    metrics = page.locator("section[aria-label=Metrics]").first.bounding_box()
    assert metrics and metrics["x"] + metrics["width"] <= 390


def test_submit_a_folder(browser: Any, live: dict[str, Any]) -> None:
    """The Submit page sends a chosen folder's files through the API's JSON form, as the CLI would."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": SESSION_COOKIE, "value": session_cookie(live["base"], live["token"]), "url": live["base"]}])
    page = context.new_page()
    page.goto(live["base"] + "/submit")
    page.locator("#s-folder").set_input_files(str(seeding.EXAMPLES / "scale_add"))
    page.locator("summary", has_text="Name, cases and labels").click()
    page.get_by_label("Operator name").fill("folder_scale_add")
    page.get_by_role("button", name="Submit").click()
    sync_api.expect(page.locator("#submit-message")).to_contain_text("accepted")
    sync_api.expect(page.locator("#submit-jobs li")).to_have_count(1)
    context.close()
