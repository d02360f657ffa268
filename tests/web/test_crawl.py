"""Every page, every verdict: crawl the real app over a database holding one job for each verdict and mode.

From the nav, every link a page offers is followed (same origin, GET): each answers 200 with no
template error (templates run with a strict Undefined here: a missing attribute used as a value raises), and every
dashboard route is reached. Every GET of the JSON API, for every id in the database, answers 200 or
its documented 404 and validates against the response schema in its OpenAPI document.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import jinja2
import jsonschema_rs
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from runtime import verdicts
from server.migrate import upgrade
from server.models import Job, Operator, Submission, SuiteRun
from server.services import tokens
from tests.web import crawl_seed
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.web.layout import SEEDED_SECTIONS, dashboard_routes, route_of
from web.deps import templates
from tests.signin import sign_in

MAX_PAGES = 600  # far above what the seed links to; a bound, so a link loop cannot hang the test
# Routes a link never leads to: they answer a form (the compare form's GET target is checked below).
NOT_LINKED = {"/login", "/logout", "/suite-runs"}


class LoudUndefined(jinja2.StrictUndefined):
    """A missing attribute raises wherever it is used as a value: printed, passed to a filter that
    computes with it, iterated, measured. Only testing it (`{% if x.y %}`, `x.y == 'ready'`) is allowed:
    that is how templates say "when present"."""

    __bool__ = jinja2.Undefined.__bool__
    __eq__ = jinja2.Undefined.__eq__
    __ne__ = jinja2.Undefined.__ne__
    __hash__ = jinja2.Undefined.__hash__


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href and not href.startswith(("mailto:", "javascript:")):
                self.links.append(href)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FastAPI, dict[str, Any]]]:
    settings = make_settings(tmp_path_factory.mktemp("crawl-data"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = crawl_seed.seed(session, app.state.blobs, settings)
        info["admin"] = tokens.create(session, "crawler", ["read", "submit", "admin"])[1]
        session.commit()
    strict, templates.env.undefined = templates.env.undefined, LoudUndefined
    try:
        yield app, info
    finally:
        templates.env.undefined = strict


@pytest.fixture
def admin(crawled: tuple[FastAPI, dict[str, Any]]) -> Iterator[TestClient]:
    app, info = crawled
    with TestClient(app, follow_redirects=False, raise_server_exceptions=True) as c:
        sign_in(c, info["admin"])
        c.headers["Authorization"] = f"Bearer {info['admin']}"
        yield c


def test_the_seed_holds_every_verdict_and_mode(crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    from server.models import CaseResult

    app, info = crawled
    with app.state.sessionmaker() as session:
        pairs = set(session.execute(select(CaseResult.verdict, CaseResult.mode).distinct()).all())
        statuses = set(session.scalars(select(Job.status).distinct()))
    assert {v for v, _ in pairs} >= set(verdicts.VERDICTS)
    assert {m for _, m in pairs} == {"sim", "npu"}
    assert {"succeeded", "failed", "queued", "awaiting_npu"} <= statuses
    assert info["reused"] is not None  # a suite run reused a result


def test_the_golden_fallback_job_page_renders(admin: TestClient, crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    """Regression (issue 24): graph verify of an output the kernel never wrote has no metrics; the
    Metrics box read max_abs_diff from the empty dict and the page answered 500."""
    job = crawled[1]["real_jobs"]["golden_fallback_unwritten"][0]
    page = admin.get(f"/jobs/{job.id}")
    assert page.status_code == 200, page.text[:500]
    assert "the kernel never wrote the output" in page.text
    assert "suspect fake pass" in page.text


def test_every_linked_page_answers(admin: TestClient, crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    app, _info = crawled
    base = "http://testserver"
    queue, seen, failures = deque(["/"]), {"/"}, []
    reached: set[str] = set()
    shown: set[str] = set()  # SEEDED_SECTIONS found on the pages of their route
    while queue and len(seen) < MAX_PAGES:
        url = queue.popleft()
        response = admin.get(url, headers={"accept": "text/html"})
        if response.status_code != 200:
            failures.append(f"{url}: {response.status_code} {response.text[:200]}")
            continue
        route = route_of(app, url)
        if route:
            reached.add(route)
        if "text/html" not in response.headers.get("content-type", ""):
            continue
        wanted = {name for name, (at, _) in SEEDED_SECTIONS.items() if at == route and name not in shown}
        if wanted:
            dom = parse(response.text)
            shown |= {name for name in wanted if dom.select(SEEDED_SECTIONS[name][1])}
        parser = _Links()
        parser.feed(response.text)
        for href in parser.links:
            target, _ = urldefrag(urljoin(base + url, href))
            parts = urlsplit(target)
            if parts.netloc != "testserver" or not parts.path:
                continue
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            if path not in seen and parts.path not in NOT_LINKED:
                seen.add(path)
                queue.append(path)
    assert not failures, failures[:10]
    assert len(seen) < MAX_PAGES, "the crawl did not finish: a link loop?"
    expected = {str(r.path) for r in dashboard_routes(app)} - NOT_LINKED
    assert expected - reached == set(), f"dashboard pages no link leads to: {sorted(expected - reached)}"
    assert set(SEEDED_SECTIONS) - shown == set(), f"sections no crawled page shows: {sorted(set(SEEDED_SECTIONS) - shown)}"


def test_the_compare_form_redirects_or_says_what_is_missing(admin: TestClient,
                                                              crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    suite = crawled[1]["suite"]
    r = admin.get(f"/suite-runs?run={suite['second']}&other={suite['first']}", headers={"accept": "text/html"})
    assert r.status_code == 303 and r.headers["location"] == f"/suite-runs/{suite['second']}/compare/{suite['first']}"
    r = admin.get("/suite-runs", headers={"accept": "text/html"})
    assert r.status_code in (400, 422) and "choose two runs" in r.text


def test_unknown_things_are_404_pages(admin: TestClient) -> None:
    for url in ("/jobs/999999", "/operators/no-such-operator", "/suite-runs/999999", "/no/such/page"):
        r = admin.get(url, headers={"accept": "text/html"})
        assert r.status_code == 404, url
        assert "<nav" in r.text, url  # the dashboard's page, with its navigation, not raw JSON


def _ids(app: FastAPI) -> dict[str, list[str]]:
    with app.state.sessionmaker() as session:
        return {"job_id": [str(i) for i in session.scalars(select(Job.id))],
                "name": list(session.scalars(select(Operator.name))),
                "submission_id": [str(i) for i in session.scalars(select(Submission.id))],
                "run_id": [str(i) for i in session.scalars(select(SuiteRun.id))]}


def _schema(doc: dict[str, Any], op: dict[str, Any]) -> dict[str, Any] | None:
    content = (op.get("responses", {}).get("200", {}).get("content") or {}).get("application/json")
    if not content or not content.get("schema"):
        return None
    return {**content["schema"], "components": doc.get("components", {})}


def test_every_api_response_matches_its_schema(admin: TestClient, crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    app, _info = crawled
    doc = app.openapi()
    ids = _ids(app)
    checked, problems = 0, []
    for path, ops in doc["paths"].items():
        op = ops.get("get")
        if op is None or not path.startswith("/api/"):
            continue
        params = re.findall(r"{(\w+)(?::path)?}", path)
        if any(p not in ids for p in params):
            continue  # an artifact path or a second run id: reached through the links above
        urls = [path]
        for p in params:
            urls = [u.replace("{" + p + "}", v) for u in urls for v in ids[p]]
        schema = _schema(doc, op)
        for url in urls:
            r = admin.get(url)
            if r.status_code == 404 and "404" in op.get("responses", {}):
                continue  # documented: e.g. the report of a job that has none yet
            if r.status_code != 200:
                problems.append(f"{url}: {r.status_code} {r.text[:200]}")
                continue
            if schema is not None:
                errors = sorted(jsonschema_rs.validator_for(schema).iter_errors(r.json()), key=str)
                problems += [f"{url}: {e.message[:200]} at {list(e.instance_path)}" for e in errors[:3]]
            checked += 1
    assert not problems, problems[:10]
    assert checked > 50


def test_coverage_counts_only_cases_whose_kernel_ran(admin: TestClient, crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    """Issue 24: a SIM result with no corroborated launch (a script that never imported, a fake pass) or a
    script run whole covers nothing, on the overview's and the coverage page's counts alike."""
    from server.models import CaseResult, CaseState

    app, _info = crawled
    with app.state.sessionmaker() as session:
        ran: dict[str, int] = {}
        for name, launches, case in session.execute(
                select(Operator.name, CaseResult.kernel_launches, CaseResult.case)
                .join(CaseState, CaseState.operator_id == Operator.id)
                .join(CaseResult, CaseResult.id == CaseState.sim_result_id)):
            ran[name] = ran.get(name, 0) + (launches > 0 and case != "main")
    items = admin.get("/api/v1/operators?limit=200").json()["items"]
    counted = {o["name"]: o["coverage"]["sim"] for o in items}
    assert {n: counted[n] for n in ran} == ran
    assert ran["golden_fallback"] == 0  # its kernel never launched: SIM covers none of its cases


# Internal ids a reader must never meet in a page's text (issue 35): verdict ids, graph verify's statuses and the
# column names they came from. Names the user gave (operators, cases), code and logs are theirs and not checked.
# (The verdicts that are plain words, pass, crash, timeout and inconclusive, are their own label.)
JARGON = re.compile(r"\b(?:%s)\b" % "|".join(sorted(
    {*verdicts.VERDICTS, "no_compare", "max_abs_diff", "provenance", "flips", "written no", "awaiting_npu"}
    - {"pass", "crash", "timeout", "inconclusive"})), re.IGNORECASE)
OWN_WORDS = ("pre", "code", "script", "style", "title", "desc", "option", "datalist", "head")


def _reader_text(node: Any) -> str:
    if isinstance(node, str):
        return node
    if node.tag in OWN_WORDS or node.classes & {"case-name", "trunc", "name"}:
        return " "
    return " ".join(_reader_text(c) for c in node.children)


def test_no_internal_word_reaches_a_page(admin: TestClient, crawled: tuple[FastAPI, dict[str, Any]]) -> None:
    ids = _ids(crawled[0])
    pages = (["/", "/coverage", "/suites", "/workers"] + [f"/jobs/{i}" for i in ids["job_id"]]
             + [f"/operators/{n}" for n in ids["name"]] + [f"/suite-runs/{i}" for i in ids["run_id"]])
    found = {}
    for url in pages:
        words = set(JARGON.findall(_reader_text(parse(admin.get(url, headers={"accept": "text/html"}).text))))
        if words:
            found[url] = sorted(words)
    assert not found, found
