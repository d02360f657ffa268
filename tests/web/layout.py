"""Layout checks run in the real browser on every dashboard page, and the list of the pages to run them on.

Used by test_browser.py (the main seed) and test_suite_browser.py (the suite seed).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.routing import Match

# Every element that sticks out of the viewport (or whose text does), ignoring those inside a container that scrolls or clips
# (reachable by scrolling it) and visually hidden ones; plus whether the page itself scrolls sideways.
OVERFLOW_JS = """() => {
  const W = document.documentElement.clientWidth, bad = [];
  const clipped = (el) => { for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; };
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if ((r.width === 0 && r.height === 0) || cs.visibility === 'hidden' || el.closest('.sr-only, .skip')) continue;
    // its box, or text spilling out of it (a nowrap line wider than its cell)
    const spills = cs.overflowX === 'visible' && el.clientWidth > 0 && r.left + el.scrollWidth > W + 1;
    if ((r.right > W + 1 || r.left < -1 || spills) && !clipped(el)) {
      bad.push(el.tagName.toLowerCase() + '.' + el.className + ' [' + Math.round(r.left) + ',' + Math.round(r.right) + ']');
    }
  }
  return {bad: bad.slice(0, 10), pageScrolls: document.documentElement.scrollWidth > W + 1};
}"""
# Inline things that must stay on one line: numbers, rule names, verdicts.
WRAP_JS = """() => Array.from(document.querySelectorAll('.nowrap, code.rule, .verdict, .mv, .cover, td.num'))
  .filter(el => el.offsetParent !== null
          && new Set(Array.from(el.getClientRects()).map(r => Math.round(r.bottom))).size > 1)
  .map(el => el.textContent.trim()).slice(0, 10)"""
# Every cell of a cases (or other results) table lies inside the viewport and inside each scrolling or
# clipping box around it: a column reachable only by scrolling the table sideways is cut off on a phone.
CUT_CELLS_JS = """() => {
  const W = document.documentElement.clientWidth, cut = [];
  for (const cell of document.querySelectorAll('table.cases th, table.cases td, table.results th, table.results td')) {
    const r = cell.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || cell.closest('thead')) continue;
    let hidden = r.left < -1 || r.right > W + 1;
    for (let a = cell.parentElement; a && !hidden && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === 'visible') continue;
      const b = a.getBoundingClientRect();
      hidden = r.left < b.left - 1 || r.right > b.right + 1;
    }
    if (hidden) cut.push((cell.dataset.label || cell.tagName.toLowerCase()) + ' [' + Math.round(r.left) + ',' + Math.round(r.right) + ']');
  }
  return cut.slice(0, 10);
}"""
# What a reader can open is checked open too.
OPEN_DETAILS_JS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def layout_problems(page: Any) -> dict[str, Any]:
    """What sticks out, wraps, or is cut off in a cases table on the loaded page, with every <details>
    opened; {} when it fits."""
    page.evaluate(OPEN_DETAILS_JS)
    found = page.evaluate(OVERFLOW_JS)
    wrapped = page.evaluate(WRAP_JS)
    cut = page.evaluate(CUT_CELLS_JS)
    return {**found, "wrapped": wrapped, "cut": cut} if found["bad"] or found["pageScrolls"] or wrapped or cut else {}


def _walk(routes: Iterable[Any]) -> Iterator[Any]:
    for r in routes:
        inner = getattr(r, "original_router", None)  # an included router
        yield from _walk(inner.routes) if inner is not None else (r,)


def dashboard_routes(app: FastAPI) -> list[Any]:
    """Every GET route the dashboard (web/) serves."""
    return [r for r in _walk(app.routes) if getattr(r, "endpoint", None) is not None
            and r.endpoint.__module__.startswith("web.") and "GET" in (r.methods or ())]


def route_of(app: FastAPI, url: str) -> str | None:
    """The dashboard route a URL lands on (its path template), or None."""
    scope = {"type": "http", "method": "GET", "path": urlsplit(url).path}
    for r in dashboard_routes(app):
        if r.matches(scope)[0] == Match.FULL:
            return str(r.path)
    return None


# The pages of a suite run need the suite seed: test_suite_browser.py checks them.
SUITE_SEED_ROUTES = ("/suite-runs/{run_id}", "/suite-runs/{run_id}/compare/{other_id}")

# Sections the crawl seed (tests/web/crawl_seed.py) must put on its pages, by dashboard route: the crawl and
# the 390 px check fail when no page of the route shows one (the seed stopped producing it).
SEEDED_SECTIONS = {
    "drift trend against its tolerance": ("/operators/{name:path}", "section#drift figure.drift-chart svg g.tolerance"),
    "drifting cases of a suite run": ("/suite-runs/{run_id}", "section#drift table.drift td"),
    "performance regressions": ("/suite-runs/{run_id}", "section#perf table.perf td"),
    "culprit of a regression": ("/suite-runs/{run_id}", "table#regressions td.why p.culprit code"),
    "culprit of a performance regression": ("/suite-runs/{run_id}", "section#perf td p.culprit code"),
}
