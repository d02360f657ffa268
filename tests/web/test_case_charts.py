"""The operator page's per-case charts: each case's own values on shared axes, worst cases first, at
most 12 drawn, and `?case=NAME` for one case alone. Its own database: 15 cases over 3 submissions."""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import insert

from server.migrate import upgrade
from server.models import CaseState
from server.services import tokens
from tests.server.bulk import Run, add_operator, add_runs
from tests.web.conftest import make_app, make_settings
from tests.web.html import Node
from tests.web.test_overview import get
from web import case_charts
from web.format import sig
from tests.signin import sign_in

T0 = datetime(2026, 11, 1, tzinfo=UTC)
CASES = [f"c{i:02d}" for i in range(14)]
DEFECTS = ("c02", "c05")  # their latest combined verdict: kernel_defect, whatever their diff


def npu_diff(case: str, run: int) -> float:
    return 1e-6 * (int(case[1:]) + 1) * (run + 1)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[tuple[int, str], float]]]:
    """Operator wide_op: 3 submissions of SIM (garbage, graph 0) and NPU; npu_only only ever ran on the NPU."""
    settings = make_settings(Path(tmp_path_factory.mktemp("case-charts")))
    upgrade(settings.resolved_database_url)
    app: FastAPI = make_app(settings)
    runs = []
    for r in range(3):
        at = T0 + timedelta(days=r)
        runs.append(Run(at, "sim", {c: ("sim_output_unwritten", 1e35) for c in CASES}, commit=f"abc{r}def"))
        runs.append(Run(at + timedelta(seconds=1), "npu", {**{c: ("pass", npu_diff(c, r)) for c in CASES},
                                                            "npu_only": ("pass", 5e-7)}, commit=f"abc{r}def"))
    with app.state.sessionmaker.begin() as session:
        op = add_operator(session, "wide_op")
        jobs = add_runs(session, op, runs)
        session.execute(insert(CaseState), [
            {"operator_id": op, "case": c, "combined_verdict": "kernel_defect" if c in DEFECTS else "pass"}
            for c in [*CASES, "npu_only"]])
        single = add_operator(session, "single_case_op")
        add_runs(session, single, [Run(T0 + timedelta(days=d), "npu", {"only": ("pass", 1e-4)}) for d in range(3)])
        secret = tokens.create(session, "reader", ["read"])[1]
    stored = {(jobs[2 * r + 1], c): npu_diff(c, r) for r in range(3) for c in CASES}
    stored.update({(jobs[2 * r + 1], "npu_only"): 5e-7 for r in range(3)})
    with TestClient(app, follow_redirects=False) as client:
        sign_in(client, secret)
        yield client, stored


def figures(page: Node) -> list[Node]:
    return page.find_all("figure", cls="case-chart")


def point_values(svg: Node, series: str) -> dict[int, str]:
    """{job id: the value its tooltip states} of one series."""
    out = {}
    for g in svg.find_all("g", data_series=series):
        for title in g.find_all("title"):
            m = re.search(r"job #(\d+) · max \|diff\| (\S+)", title.text())
            assert m, title.text()
            out[int(m.group(1))] = m.group(2)
    return out


def test_the_worst_cases_come_first_and_12_are_drawn(wide) -> None:
    client, _ = wide
    page = get(client, "/operators/wide_op")
    # defects first (the larger diff first), then by the worst NPU diff; npu_only (5e-7) is the smallest
    order = ["c05", "c02", "c13", "c12", "c11", "c10", "c09", "c08", "c07", "c06", "c04", "c03"]
    assert [f.attrs["data-case"] for f in figures(page)] == order
    assert all("v-kernel_defect" in f.find("span", cls="verdict").classes for f in figures(page)[:2])
    more = page.find("p", cls="more-cases")
    assert more.text().startswith("3 more cases not drawn")
    assert [a.attrs["href"] for a in more.find_all("a")] == ["?case=c01", "?case=c00", "?case=npu_only"]
    assert case_charts.MAX_CASES == 12


def test_each_case_shows_its_own_values_on_shared_axes(wide) -> None:
    client, stored = wide
    page = get(client, "/operators/wide_op")
    svgs = [f.find("svg") for f in figures(page)]
    for f, svg in zip(figures(page), svgs):
        case = f.attrs["data-case"]
        npu = point_values(svg, "NPU")
        assert npu == {job: sig(v) for (job, c), v in stored.items() if c == case}, case
        assert set(point_values(svg, "graph verify").values()) == {"0"}  # "0 (exact)"
        assert f.find("a", cls="case-name").attrs["href"] == f"?case={case}"
    # the same slots and the same scale in every case's chart
    axes = {tuple(t.text() for t in svg.find("g", cls="grid").find_all("text")) for svg in svgs}
    assert len(axes) == 1 and "1e-6" in next(iter(axes))
    xs = {tuple(c.attrs["cx"] for c in svg.find("g", data_series="NPU").find_all("circle")) for svg in svgs}
    assert len(xs) == 1
    # the main chart stays the worst over the cases
    main = point_values(page.find("svg", id="history-chart"), "NPU")
    assert sorted(main.values()) == [sig(npu_diff("c13", r)) for r in range(3)]


def test_one_case_alone(wide) -> None:
    client, stored = wide
    page = get(client, "/operators/wide_op?case=c03")
    assert "c03" in page.find("h2", id="h-hist").text() and not figures(page)
    assert page.find("p", cls="case-pick").find("a").attrs["href"] == "?"
    main = point_values(page.find("svg", id="history-chart"), "NPU")
    assert main == {job: sig(v) for (job, c), v in stored.items() if c == "c03"}
    npu_only = get(client, "/operators/wide_op?case=npu_only&range=90d").find("svg", id="history-chart")
    assert not npu_only.find_all("g", data_series="SIM raw") and not npu_only.find_all("g", data_series="graph verify")
    assert set(point_values(npu_only, "NPU").values()) == {"5.00e-7"}
    missing = client.get("/operators/wide_op?case=no_such_case")
    assert missing.status_code == 404 and "no_such_case" in missing.text


def test_one_case_operator_has_no_per_case_section(wide) -> None:
    client, _ = wide
    page = get(client, "/operators/single_case_op")
    assert page.find("svg", id="history-chart") and not figures(page) and not page.find_all(id="h-per-case")
