"""The claims audit: every badge, chip and headline number on every page agrees with the stored
per-case verdicts, and none claims more coverage than was measured.

The seeded database holds partial NPU coverage (softmax_partial), a fake pass (golden_fallback),
a graph_fail (wrong_maths) and the flag (scale_add).
"""
from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from server.models import CaseResult, CaseState, Job, Operator
from server.services.combined import FLAGGED
from tests.web.html import Node
from tests.web.test_overview import get
from web.format import sig

NPU_CLAIMS = ("sim_garbage_npu_ok", "pass")  # combined verdicts that claim an NPU checked the kernel


def stored(app: FastAPI) -> dict[str, dict[str, Any]]:
    """{operator: {verdict, cases: {case: (combined, sim CaseResult | None, npu CaseResult | None)}}}."""
    out: dict[str, dict[str, Any]] = {}
    with app.state.sessionmaker() as session:
        for op in session.scalars(select(Operator).where(Operator.combined_verdict.is_not(None))):
            cases = {}
            for s in session.scalars(select(CaseState).where(CaseState.operator_id == op.id)):
                sim = session.get(CaseResult, s.sim_result_id) if s.sim_result_id else None
                npu = session.get(CaseResult, s.npu_result_id) if s.npu_result_id else None
                cases[s.case] = (s.combined_verdict, sim, npu)
            jobs = list(session.scalars(select(Job.id).where(Job.operator_id == op.id)))
            out[op.name] = {"verdict": op.combined_verdict, "cases": cases, "jobs": jobs}
            session.expunge_all()
    return out


def npu_cover(cases: dict[str, Any]) -> str:
    n, total = sum(1 for _, _, npu in cases.values() if npu is not None), len(cases)
    return f"NPU {n}/{total} case{'' if total == 1 else 's'}"


def graph_claims_ok(cell: Node, sims: list[Any]) -> None:
    text = cell.text()
    statuses = [r.graph_status for r in sims]
    if "✓" in text:
        assert statuses and all(s == "pass" for s in statuses if s in ("pass", "fail")), text
    if any(r.graph_status == "fail" and r.graph_max_abs_diff == 0 for r in sims):
        assert "not written by the kernel" in text and "✓" not in text


def test_overview_claims_match_the_stored_cases(client: TestClient, app: FastAPI) -> None:
    truth = stored(app)
    page = get(client, "/?per_page=200")
    rows = {r.attrs["data-operator"]: r for r in page.find_all("tbody", cls="op")}
    assert set(rows) == set(truth)
    for name, t in truth.items():
        r, cases = rows[name], t["cases"]
        verdicts = [v for v, _, _ in cases.values()]
        assert r.attrs["data-verdict"] == t["verdict"]
        if t["verdict"] in NPU_CLAIMS:  # the badge claims an NPU: every case must have passed one
            assert all(npu is not None and npu.verdict == "pass" for _, _, npu in cases.values()), name
        if t["verdict"] in FLAGGED:
            assert all(v in FLAGGED for v in verdicts), name
        npu = r.find("td", data_label="NPU diff / tol")
        assert npu.find("span", cls="cover").text() == npu_cover(cases), name
        npus = [n for _, _, n in cases.values() if n is not None]
        if "✓" in npu.text():
            assert npus and all(n.verdict == "pass" for n in npus), name
        graph_claims_ok(r.find("td", data_label="Graph verify"), [s for _, s, _ in cases.values() if s])
        if t["verdict"] not in FLAGGED:
            for garbage in r.find_all("span", cls="garbage"):
                assert "not a kernel defect" not in garbage.attrs.get("title", ""), name
    counts = {a.attrs["class"].split()[1][2:]: int(a.find("span", cls="n").text())
              for a in page.find("nav", cls="counts").find_all("a") if "all" not in a.classes}
    for verdict, n in counts.items():
        assert n == sum(1 for t in truth.values() if t["verdict"] == verdict), verdict


def test_operator_pages_agree_with_the_stored_cases(client: TestClient, app: FastAPI) -> None:
    for name, t in stored(app).items():
        page = get(client, f"/operators/{name}")
        assert f"v-{t['verdict']}" in page.find("h1").find("span", cls="verdict").classes
        facts = {d.find("dt").text(): d.find("dd") for d in page.find("dl", cls="facts").find_all("div")}
        assert facts["NPU diff / tol"].find("span", cls="cover").text() == npu_cover(t["cases"]), name
        for tr in page.find("table", cls="cases").find("tbody").find_all("tr"):
            case = tr.find("th").find("span", cls="trunc").attrs["title"]
            combined, sim, npu = t["cases"][case]
            cells = tr.find_all("td")
            assert f"v-{combined}" in cells[0].find("span", cls="verdict").classes, (name, case)
            assert (cells[2].text() == "—") == (npu is None), (name, case)
            if sim is not None:
                graph_claims_ok(cells[1], [sim])
            assert "rules" in cells[6].classes and "noise-" not in cells[6].text()  # the Diagnosis column


def test_job_pages_agree_with_the_stored_results(client: TestClient, app: FastAPI) -> None:
    for name, t in stored(app).items():
        for job_id in t["jobs"]:
            page = get(client, f"/jobs/{job_id}")
            with app.state.sessionmaker() as session:
                results = {r.case: r.verdict for r in session.scalars(
                    select(CaseResult).where(CaseResult.job_id == job_id))}
            table = page.find_all("table", cls="cases")
            if not results:
                assert not table
                continue
            for tr in table[0].find("tbody").find_all("tr"):
                case = tr.find("th").find("span", cls="trunc").attrs["title"]
                verdict = results[case]
                assert f"mv-{verdict}" in tr.find("span", cls="mv").classes
                stages = {s.find("span", cls="stg-name").text(): s.classes for s in tr.find_all("span", cls="stg")}
                if verdict in ("graph_fail", "suspect_fake_pass"):
                    assert "stg-ok" not in stages.get("graph verify", set()), (name, case)
                if verdict in ("precision_fail", "suspect_fake_pass"):
                    assert "stg-ok" not in stages.get("compare", set()), (name, case)


def test_coverage_page_agrees_with_the_stored_cases(client: TestClient, app: FastAPI) -> None:
    truth = stored(app)
    page = get(client, "/coverage")
    for tr in page.find("table", cls="coverage").find("tbody").find_all("tr"):
        t = truth[tr.attrs["data-operator"]]
        assert tr.find("td", data_mode="npu").text() == npu_cover(t["cases"])
        n_sim = sum(1 for _, s, _ in t["cases"].values() if s is not None)
        assert tr.find("td", data_mode="sim").text().startswith(f"SIM {n_sim}/{len(t['cases'])}")


def test_per_case_charts_agree_with_the_stored_cases(client: TestClient, app: FastAPI) -> None:
    """Each case's small chart: its verdict badge and every number it states are that case's stored ones."""
    with app.state.sessionmaker() as session:
        values = {(r.job_id, r.case): r for r in session.scalars(select(CaseResult))}
        session.expunge_all()
    seen = 0
    for name, t in stored(app).items():
        page = get(client, f"/operators/{name}")
        for fig in page.find_all("figure", cls="case-chart"):
            case = fig.attrs["data-case"]
            combined, sim, npu = t["cases"][case]
            assert f"v-{combined}" in fig.find("figcaption").find("span", cls="verdict").classes, (name, case)
            for title in fig.find_all("title"):
                m = re.search(r"^(SIM raw|graph verify|NPU) · job #(\d+) · (?:max \|diff\| (\S+)|✗)", title.text())
                if not m:
                    continue  # the chart's own title
                r = values[(int(m.group(2)), case)]
                value = r.graph_max_abs_diff if m.group(1) == "graph verify" else r.max_abs_diff
                if m.group(3) is None:
                    assert r.graph_status == "fail", (name, case)
                else:
                    assert m.group(3) == sig(value), (name, case, title.text())
                seen += 1
            for dt, dd in zip(fig.find_all("dt"), fig.find_all("dd")):  # one submission: its numbers
                latest = {"SIM raw": sim and sim.max_abs_diff, "graph verify": sim and sim.graph_max_abs_diff,
                          "NPU": npu and npu.max_abs_diff}.get(dt.text(), "tolerance")
                if latest != "tolerance" and "not written by the kernel" not in dd.text():
                    assert dd.text().startswith(("✗ " if sim and sim.graph_status == "fail" and
                                                 dt.text() == "graph verify" else "") + sig(latest)), (name, case)
                    seen += 1
    assert seen > 10
