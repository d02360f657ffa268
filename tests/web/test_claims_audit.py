"""The claims audit: every badge, chip and headline number on every page agrees with the stored
per-case verdicts, and none claims more coverage than was measured.

The seeded database holds partial NPU coverage (softmax_partial), a fake pass (golden_fallback),
a graph_fail (wrong_maths) and the flag (scale_add); the suite seed (tests/web/suite_seed.py) two
runs of a suite, for the suite run and compare pages.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from runtime import numbers, verdicts, vocabulary
from server.migrate import upgrade
from server.models import CaseResult, CaseState, Job, Operator, SuiteRun, SuiteRunResult
from server.services import ingest, tokens
from server.services.combined import FLAGGED
from tests.server.suites import scale_add, sim_report
from tests.web import suite_seed
from tests.web.conftest import make_app, make_settings
from tests.web.html import Node
from tests.web.test_overview import get
from web.format import sig
from tests.signin import sign_in

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
            outcome = vocabulary.worst(case_outcome(sim, npu) for _, sim, npu in cases.values())
            out[op.name] = {"verdict": op.combined_verdict, "cases": cases, "jobs": jobs, "outcome": outcome}
            session.expunge_all()
    return out


def case_outcome(sim: Any, npu: Any) -> str | None:
    """A case's outcome from its stored results, each mode's by the one table (runtime.exit_codes.TABLE)."""
    return vocabulary.across_modes(vocabulary.outcome(r.verdict, mode, r.stage or "")
                                   for r, mode in ((sim, "sim"), (npu, "npu")) if r is not None)


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
        assert r.attrs["data-outcome"] == t["outcome"], name
        badge = r.find("td", data_label="Outcome · verdict").find("span", cls="outcome")
        assert badge.text() == vocabulary.word(t["outcome"]) and f"vc-{t['outcome']}" in badge.classes, name
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
    counts = {a.attrs["data-outcome"]: int(a.find("span", cls="n").text())
              for a in page.find("nav", cls="counts").find_all("a") if "all" not in a.classes}
    assert list(counts) == list(vocabulary.OUTCOMES)
    for outcome, n in counts.items():
        assert n == sum(1 for t in truth.values() if t["outcome"] == outcome), outcome


def test_each_row_s_case_table_agrees_with_the_stored_cases(client: TestClient, app: FastAPI) -> None:
    """What an overview row shows when opened (/cases?operator=NAME, lifted in by web/static/app.js)."""
    for name, t in stored(app).items():
        page = get(client, "/cases?" + urlencode({"operator": name}))
        if not t["cases"]:
            assert not page.find_all("div", id="op-cases"), name
            continue
        trs = page.find("div", id="op-cases").find("tbody").find_all("tr")
        assert len(trs) == len(t["cases"]), name
        for tr in trs:
            case = tr.find("th").find("span", cls="trunc").attrs["title"]
            combined, sim, npu = t["cases"][case]
            cells = {td.attrs["data-label"]: td for td in tr.find_all("td")}
            assert f"v-{combined}" in cells["Outcome · verdict"].find("span", cls="verdict").classes, (name, case)
            outcome = cells["Outcome · verdict"].find("span", cls="outcome").attrs["data-outcome"]
            assert outcome == case_outcome(sim, npu), (name, case)
            assert (cells["NPU diff / tol"].text() == "—") == (npu is None), (name, case)
            if sim is not None:
                graph_claims_ok(cells["Graph"], [sim])


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
                elif m.group(1) == "SIM raw" and value:  # leftover memory: the one garbage rendering
                    assert numbers.sim_diff_text(value, garbage=True) in title.text(), (name, case, title.text())
                else:
                    assert m.group(3) == sig(value), (name, case, title.text())
                seen += 1
            for dt, dd in zip(fig.find_all("dt"), fig.find_all("dd")):  # one submission: its numbers
                latest = {"SIM raw": sim and sim.max_abs_diff, "graph verify": sim and sim.graph_max_abs_diff,
                          "NPU": npu and npu.max_abs_diff}.get(dt.text(), "tolerance")
                if dt.text() == "SIM raw" and latest:
                    assert dd.text() == numbers.sim_diff_text(latest, garbage=True), (name, case)
                    seen += 1
                elif latest != "tolerance" and "not written by the kernel" not in dd.text():
                    assert dd.text().startswith(("✗ " if sim and sim.graph_status == "fail" and
                                                 dt.text() == "graph verify" else "") + sig(latest)), (name, case)
                    seen += 1
    assert seen > 10


# Suite runs (tests/web/suite_seed.py): run 2 holds a regression, a fix, new and vanished operators, and NPU
# uploads of which gamma's are unverified (no device): a pass nobody saw on an NPU.
Key = tuple[str, str, str]  # operator, case, mode


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, FastAPI, dict[str, Any]]]:
    settings = make_settings(tmp_path_factory.mktemp("suite-claims"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = suite_seed.seed(session, app.state.blobs, settings)
        info["token"] = tokens.create(session, "reader", ["read"])[1]
        retry_on_a_device(session, app.state.blobs)
        info["third"] = suite_seed._run(session, app.state.blobs, settings, "ccc3333", {"alpha": {}})
        for op in ("alpha", "gamma"):
            upload_npu(session, app.state.blobs, op, "pipe-ccc3333", {}, "pass", 2.5e-4)  # no device: unverified
        session.commit()
    with TestClient(app, follow_redirects=False) as client:
        sign_in(client, info["token"])
        yield client, app, info
    app.state.engine.dispose()


def upload_npu(session: Any, blobs: Any, op: str, run_key: str, env: dict[str, str], verdict: str, diff: float,
               cases: tuple[str, ...] = (suite_seed.C1, suite_seed.C2), attempt: int = 1) -> None:
    """An NPU lab's report for `op` into a suite run (without a device in `env` it is unverified)."""
    report = sim_report(scale_add(), op)
    report.update(mode="npu", cases=[c for c in report["cases"] if c["case"] in cases])
    report["environment"].update({"cann": "8.0.RC3", **env})
    for case in report["cases"]:
        case.update(verdict=verdict, precision="pass" if verdict == "pass" else "fail", output_written=True,
                    graph_verify=None)
        case["metrics"] = {**case["metrics"], "max_abs_diff": diff, "atol": 1e-3}
    ingest.store(session, blobs, ingest.Upload(
        suite="nightly", run_key=run_key, attempt=attempt, labels={}, mode="npu",
        environment=report["environment"], cases=report["cases"], kind="report", filename=f"{op}-{attempt}.json",
        raw=json.dumps(report).encode(), content_sha256={op: report["submission"]["sha256"]}), "npu-lab", True)


def retry_on_a_device(session: Any, blobs: Any) -> None:
    """The NPU lab sends gamma's first case again as attempt 2, from a device: a precision failure that
    replaces the unverified pass (the page must count the case once, by its latest attempt)."""
    upload_npu(session, blobs, "gamma", "pipe-bbb2222", {"device": "npu:5"}, "precision_fail", 0.5,
               cases=(suite_seed.C1,), attempt=2)


def run_truth(app: FastAPI, run_id: int) -> dict[Key, SuiteRunResult]:
    """Each case's latest attempt in the run, as stored."""
    out: dict[Key, SuiteRunResult] = {}
    with app.state.sessionmaker() as session:
        for r in session.scalars(select(SuiteRunResult).where(SuiteRunResult.suite_run_id == run_id)
                                 .order_by(SuiteRunResult.attempt)):
            out[(r.operator, r.case, r.mode)] = r
            stored = session.get(CaseResult, r.case_result_id) if r.case_result_id else None
            r.outcome = vocabulary.outcome(r.verdict, r.mode, stored.stage if stored else "")
        session.expunge_all()
    return out


def chip(cell: Node) -> str | None:
    """The verdict a mode-verdict chip claims (None for a dash)."""
    found = cell.find_all("span", cls="mv")
    return next(c[3:] for c in found[0].classes if c.startswith("mv-")) if found else None


def row_key(tr: Node) -> tuple[str, str]:
    op, case = (s.attrs["title"] for s in tr.find("th").find_all("span", cls="trunc"))
    return op, case


def check_totals(page: Node, truth: dict[Key, SuiteRunResult]) -> None:
    done = {k: r for k, r in truth.items() if r.verdict is not None}
    ok = [k for k, r in done.items() if verdicts.acceptable(r.verdict, k[2])]
    ok_unverified = [k for k in ok if not done[k].verified]
    section = page.find("section", aria_labelledby="h-totals")
    facts = {d.find("dt").text(): d.find("dd").text() for d in section.find("dl", cls="facts").find_all("div")}
    n_ops = len({k[0] for k in truth})
    assert facts["Cases"] == f"{len(truth)} in {n_ops} operator{'' if n_ops == 1 else 's'}"
    # Acceptable counts what was checked; a pass nobody verified is named as such, never added in silently.
    assert facts["acceptable"] == str(len(ok) - len(ok_unverified)) + (
        f" +{len(ok_unverified)} unverified" if ok_unverified else "")
    for outcome in vocabulary.OUTCOMES[:-1]:  # kernel defects apart from harness and what cannot be judged
        assert facts[vocabulary.word(outcome)] == str(sum(1 for r in done.values() if r.outcome == outcome))
    uploaded = [r for r in done.values() if r.source not in ("worker", "reused")]
    unverified = sum(1 for r in done.values() if not r.verified)
    assert facts["Uploaded"] == f"{len(uploaded)}" + (f" ({unverified} unverified)" if unverified else "")
    assert facts["Reused"] == str(sum(1 for r in done.values() if r.source == "reused"))
    shown = {}
    for span in section.find_all("span", cls="mode-counts"):
        for v in span.find_all("span", cls="vcount"):
            unverified_text = v.find_all("span", cls="warn")
            shown[(span.attrs["data-mode"], chip(v))] = (
                int(v.find("span", cls="n").text()),
                int(unverified_text[0].text().split()[0].lstrip("+")) if unverified_text else 0)
    expected: dict[tuple[str, str], list[int]] = {}
    for (_, _, mode), r in done.items():
        n = expected.setdefault((mode, r.verdict), [0, 0])
        n[0 if r.verified else 1] += 1
    assert shown == {k: tuple(v) for k, v in expected.items()}


def check_results(page: Node, truth: dict[Key, SuiteRunResult]) -> None:
    """Each case's latest attempt shows its stored verdict; an earlier attempt is marked as replaced."""
    rows = page.find("table", cls="results").find("tbody").find_all("tr")
    seen = set()
    for tr in rows:
        key = (*row_key(tr), tr.find("td", data_label="Mode").text().split()[0].lower())
        r = truth[key]
        if "superseded" in tr.classes:
            assert f"replaced by attempt {r.attempt}" in tr.text(), key
            continue
        seen.add(key)
        assert chip(tr.find("td", data_label="Verdict")) == r.verdict, key
        assert ("unverified" in tr.find("td", data_label="Source").text()) == (not r.verified), key
    assert seen == set(truth) and len(rows) == len(truth) + sum(r.attempt - 1 for r in truth.values())


def check_comparison(page: Node, now: dict[Key, SuiteRunResult], before: dict[Key, SuiteRunResult]) -> None:
    """Every count chip equals its list's length, and every Before / Now chip is the stored verdict."""
    counts = {a.attrs["href"][1:]: int(a.find("strong").text())
              for a in page.find("ul", cls="counts").find_all("a")}
    listed: dict[str, set[Key]] = {}
    for section, n in counts.items():
        table = page.find_all("table", id=section)
        rows = table[0].find("tbody").find_all("tr") if table else []
        assert len(rows) == n, section
        for tr in rows:
            op, case = row_key(tr)
            mode = tr.find("td", data_label="Mode").text().lower()
            if mode == "both":  # a new flag: the case's SIM and NPU verdicts together
                assert chip(tr.find("td", data_label="Now")) in FLAGGED
                continue
            key = (op, case, mode)
            listed.setdefault(section, set()).add(key)
            assert chip(tr.find("td", data_label="Before")) == (before[key].verdict if key in before else None), key
            assert chip(tr.find("td", data_label="Now")) == (now[key].verdict if key in now else None), key
    assert listed.get("new", set()) == now.keys() - before.keys()
    assert listed.get("vanished", set()) == before.keys() - now.keys()
    both = now.keys() & before.keys()
    moved = listed.get("regressions", set()) | listed.get("fixes", set()) | listed.get("changed", set())
    assert all(now[k].verdict != before[k].verdict for k in listed.get("changed", set()) | listed.get("fixes", set()))
    # Fixed claims the case is acceptable now: a pass nobody verified does not make it so.
    assert all(now[k].verified for k in listed.get("fixes", set()))
    for tr in (page.find_all("table", id="new-flags") or [Node("table")])[0].find_all("tr")[1:]:
        if chip(tr.find("td", data_label="Now")) == "sim_garbage_npu_ok":  # claims an NPU checked it
            op, case = row_key(tr)
            assert now[(op, case, "npu")].verified, (op, case)
    unchanged = page.find("ul", cls="counts").find("li", cls="muted").find("strong").text()
    assert int(unchanged) == len(both - moved)
    assert all(now[k].verdict == before[k].verdict for k in both - moved)


def test_suite_run_pages_agree_with_the_stored_results(suites: tuple[TestClient, FastAPI, dict[str, Any]]) -> None:
    client, app, info = suites
    first, second = run_truth(app, info["first"]), run_truth(app, info["second"])
    assert any(not r.verified for r in second.values())  # the seed holds what could be overstated
    assert any(r.attempt == 2 for r in second.values())
    third = run_truth(app, info["third"])
    with app.state.sessionmaker() as session:  # totals as an older version stored them: recounted on view
        run = session.get(SuiteRun, info["third"])
        run.totals = {k: v for k, v in run.totals.items() if k not in ("unverified_by_mode", "acceptable_unverified")}
        run.totals = {**run.totals, "cases": run.totals["cases"] + 1}
        session.commit()
    for run_id, truth, previous in ((info["first"], first, None), (info["second"], second, first),
                                    (info["third"], third, second)):
        page = get(client, f"/suite-runs/{run_id}")
        check_totals(page, truth)
        check_results(page, truth)
        if previous is not None:
            check_comparison(page, truth, previous)


def test_compare_pages_agree_with_the_stored_results(suites: tuple[TestClient, FastAPI, dict[str, Any]]) -> None:
    client, app, info = suites
    runs = {i: run_truth(app, i) for i in (info["first"], info["second"], info["third"])}
    assert runs[info["second"]][("gamma", suite_seed.C1, "npu")].verdict == "precision_fail"  # then an unverified pass
    for a, b in ((info["second"], info["first"]), (info["first"], info["second"]), (info["second"], info["second"]),
                 (info["third"], info["second"]), (info["third"], info["first"])):
        check_comparison(get(client, f"/suite-runs/{a}/compare/{b}"), runs[a], runs[b])


def test_the_suite_list_agrees_with_the_stored_results(suites: tuple[TestClient, FastAPI, dict[str, Any]]) -> None:
    client, app, info = suites
    page = get(client, "/suites")
    compared = 0
    for tr in page.find("table", cls="runs").find("tbody").find_all("tr"):
        run_id = int(tr.find("th").text().split("#")[1])
        truth = run_truth(app, run_id)
        done = [(k, r) for k, r in truth.items() if r.verdict is not None]
        assert tr.find("td", data_label="Cases").text() == str(len(truth))
        assert tr.find("td", data_label="Kernel defect").text() == str(sum(1 for _, r in done if r.outcome == "failed"))
        vs = tr.find("td", data_label="vs previous")
        links = vs.find_all("a")
        if links:  # the stored comparison's chips: what the compare page finds now, case by case
            counts = {a.attrs["href"][1:]: int(a.find("strong").text())
                      for a in get(client, links[0].attrs["href"]).find("ul", cls="counts").find_all("a")}
            text = vs.text()
            assert (f"{counts['regressions']} regressed" in text if counts["regressions"] else "no regression" in text)
            assert (f"{counts['fixes']} fixed" in text) == bool(counts["fixes"]), text
            compared += 1
    assert compared == 2  # runs 2 and 3 each against the run before
