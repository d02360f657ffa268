"""Every verdict, and every stage of not_run, reads as one outcome on every surface (issue 35): the CLI's
case line and summary, the `crosscheck up` console line, the JUnit element, the overview's row and chip,
the job page, the suite page and the regression webhook's payload all say the same word
(runtime/vocabulary.py), and the regression gate counts kernel defects only.

One fresh database: a baseline suite run where every operator is acceptable, then a run where each
operator's cases carry one planted (verdict, stage); the two NPU verdicts as NPU jobs.
"""
from __future__ import annotations

import ast
import io
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from rich.console import Console
from sqlalchemy import select

from client import junit_out
from runtime import verdicts, vocabulary
from runtime.cli import console as cli_console
from runtime.report import from_dict
from server.commands.job_feed import job_line
from server.migrate import upgrade
from server.models import Job, Suite, SuiteRunResult, WebhookDelivery
from server.services import suite_runs, tokens, workers
from tests.server.suites import scale_add, sim_report, versions
from tests.signin import sign_in
from tests.web import seed as main_seed
from tests.web import suite_seed
from tests.web.conftest import make_app, make_settings
from tests.web.test_overview import get, row

F, B, S, A = "failed", "broken", "skipped", "acceptable"
# What each (verdict, mode, stage) means, written out here so that a changed table in runtime/exit_codes.py
# shows up as a failure, not as a page that silently agrees with it.
EXPECTED = {
    ("structural_error", "sim", "sim"): F, ("crash", "sim", "sim"): F, ("timeout", "sim", "sim"): F,
    ("suspect_fake_pass", "sim", "compare"): F, ("graph_fail", "sim", "graph_verify"): F,
    ("not_run", "sim", "sim"): F,  # a script that stopped before any kernel ran: the submission never ran one
    ("resource_limit", "sim", "sim"): B, ("not_run", "sim", "golden"): B,
    ("not_run", "sim", "device"): B, ("not_run", "sim", "environment"): S, ("not_run", "sim", "npu_only"): S,
    ("not_run", "sim", "arguments"): S, ("not_run", "sim", "no_kernel"): S, ("not_run", "sim", "skipped"): S,
    ("version_skew", "sim", "sim"): S, ("sim_unsupported", "sim", "sim"): S, ("inconclusive", "sim", "compare"): S,
    ("sim_output_unwritten", "sim", "compare"): A, ("sim_garbage_graph_ok", "sim", "compare"): A,
    ("pass", "npu", "compare"): A, ("precision_fail", "npu", "compare"): F,
}
CASES = [k for k in EXPECTED if k[0] in verdicts.VERDICTS]
SIM_CASES = [k for k in CASES if k[1] == "sim"]
NPU_CASES = [k for k in CASES if k[1] == "npu"]
BASE = "http://crosscheck.test"
DEFECTS = ("kernel_defect", "suspect_fake_pass", "structural_error", "npu_only_fail", "sim_only_error")  # combined
MEMORY_OP = "o_graph_verify_memory"  # acceptable in SIM; graph verify stopped at the job's memory limit


def memory_limited() -> dict[str, Any]:
    """SIM ran the kernel; graph verify was stopped by the memory limit and the case ran again without it
    (runtime.judge.reruns.memory_of_graph_verify)."""
    report = sim_report(scale_add(), MEMORY_OP)
    for case in report["cases"]:
        case.update(verdict="sim_output_unwritten", graph_verify={
            "status": "unavailable", "metrics": None, "rule": "graph-verify-memory",
            "reason": "graph verify needed more than the job's memory limit; raise --memory for it"})
    return report


def op_name(key: tuple[str, str, str]) -> str:
    verdict, mode, stage = key
    return f"o_{verdict}_{mode}_{stage}"


def word(key: tuple[str, str, str]) -> str:
    return vocabulary.WORDS[EXPECTED[key]]


def test_every_verdict_has_an_outcome_here() -> None:
    """A verdict added to runtime/verdicts.py needs its row above (and in runtime/exit_codes.TABLE)."""
    assert set(verdicts.VERDICTS) <= {v for v, _, _ in CASES}
    assert set(vocabulary.WORDS) == {F, B, S, A}


def planted(key: tuple[str, str, str]) -> dict[str, Any]:
    """A real report of this host (tests/server/fixtures) with both cases planted with one verdict and stage."""
    verdict, mode, stage = key
    report = sim_report(scale_add(), op_name(key))
    if mode == "npu":
        report = main_seed.npu_report(report, within=verdict == "pass")
    for case in report["cases"]:
        case.update(verdict=verdict, stage=stage, verdict_reason=f"planted {verdict} at {stage}")
        if verdict == "structural_error":
            case["structural"], case["graph_verify"] = "error", None
    return report


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("outcomes"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    blobs = app.state.blobs
    with app.state.sessionmaker() as session:
        workers.heartbeat(session, suite_seed.WORKER, "web", ["sim"], {"versions": versions()}, None)
        names = {op_name(k): {} for k in SIM_CASES}
        first = suite_seed._run(session, blobs, settings, "aaa1111", names)  # every operator acceptable
        session.scalar(select(Suite).where(Suite.name == "nightly")).webhook_url = "http://127.0.0.1:9/hook"
        second = plant_run(session, blobs, settings)
        npu_jobs = {k: main_seed.submit_and_store(session, blobs, settings, "scale_add", {"npu": planted(k)},
                                                  operator=op_name(k))[0].id for k in NPU_CASES}
        main_seed.submit_and_store(session, blobs, settings, "scale_add", {"sim": memory_limited()}, operator=MEMORY_OP)
        secret = tokens.create(session, "reader", ["read", "submit"])[1]
        session.commit()
    with TestClient(app, follow_redirects=False) as client:
        sign_in(client, secret)
        yield {"app": app, "client": client, "first": first, "second": second, "npu_jobs": npu_jobs,
               "token": secret}
    app.state.engine.dispose()


def plant_run(session: Any, blobs: Any, settings: Any) -> int:
    """The second run: suite_seed's run with each operator's report planted (its stage included)."""
    from server.services import results, submissions, suite_submit
    from server.services import jobs as job_service
    from tests.server.suites import zip_files

    run, _ = suite_runs.open_run(session, "nightly", "pipe-bbb2222", {"branch": "main", "commit": "bbb2222"},
                                 ["sim"], False, "ci-bot", True)
    for key in SIM_CASES:
        out = suite_submit.submit_operator(session, blobs, settings, run, submissions.NewSubmission(
            filename="op.zip", data=zip_files(scale_add()), operator=op_name(key), submitted_by="ci-bot"))
        for job in out.jobs:
            session.flush()
            assert job_service.claim(session, job.id, suite_seed.WORKER, 1)
            session.refresh(job)
            assert results.store(session, blobs, session.get(Job, job.id), 1, planted(key))
    suite_runs.close(session, run)
    return run.id


def jobs_by_key(world: dict[str, Any]) -> dict[tuple[str, str, str], Job]:
    with world["app"].state.sessionmaker() as session:
        ids = {r.operator: r.job_id for r in session.scalars(
            select(SuiteRunResult).where(SuiteRunResult.suite_run_id == world["second"]))}
        out = {k: session.get(Job, ids[op_name(k)]) for k in SIM_CASES}
        out.update({k: session.get(Job, world["npu_jobs"][k]) for k in NPU_CASES})
        session.expunge_all()
    return out


@pytest.mark.parametrize("key", CASES, ids=op_name)
def test_the_cli_says_the_outcome_on_the_case_line_and_in_the_summary(key: tuple[str, str, str]) -> None:
    report = from_dict(planted(key))
    for width in (80, 200):  # the stacked blocks and the table
        out = io.StringIO()
        cli_console.print_report(report, Console(file=out, width=width, color_system=None))
        text = out.getvalue()
        case = report.cases[0].case
        line = next(l for l in text.splitlines() if case in l and key[0] in l)
        assert word(key) in line, (width, line)
        others = set(vocabulary.WORDS.values()) - {word(key)}
        assert not any(o in line for o in others if o not in word(key)), line
    assert cli_console.summary_line(report).split(": ", 1)[1].startswith(f"{word(key)} ×2"), \
        cli_console.summary_line(report)


def test_the_up_console_line_says_the_outcome(world: dict[str, Any]) -> None:
    for key, job in jobs_by_key(world).items():
        line = job_line(job.id, op_name(key), job.mode, job.status, job.summary, job.error, BASE)
        assert f": {word(key)} ×2 ({key[0]} ×2)" in line, line


def test_junit_puts_each_outcome_in_its_element_with_the_reason_and_the_job_link(world: dict[str, Any]) -> None:
    client = world["client"]
    hdr = {"X-API-Token": world["token"]}
    rows = client.get(f"/api/v1/suite-runs/{world['second']}/results", headers=hdr, params={"limit": 1000}).json()
    items = rows["items"]
    for key, job in jobs_by_key(world).items():  # the NPU jobs as JUnit rows of their own
        if key in NPU_CASES:
            for c in client.get(f"/api/v1/jobs/{job.id}/report", headers=hdr).json()["cases"]:
                items.append({"operator": op_name(key), "case": c["case"], "mode": "npu", "verdict": c["verdict"],
                              "stage": c["stage"], "job_id": job.id})
    tree = junit_out.build("nightly", f"{BASE}/suite-runs/{world['second']}", items)
    root = tree.getroot()
    element = {F: "failure", B: "error", S: "skipped"}
    counts: Counter[str] = Counter()
    for suite in root.iter("testsuite"):
        key = next(k for k in CASES if op_name(k) == suite.get("name"))
        for tc in suite.iter("testcase"):
            props = {p.get("name"): p.get("value") for p in tc.iter("property")}
            assert props["outcome"] == word(key), suite.get("name")
            assert re.fullmatch(rf"{BASE}/jobs/\d+", props["url"]) and props["url"] in tc.find("system-out").text
            found = [c.tag for c in tc if c.tag in ("failure", "error", "skipped")]
            assert found == ([element[EXPECTED[key]]] if EXPECTED[key] != A else []), suite.get("name")
            if found:
                head = tc.find(found[0]).get("message")
                assert word(key) in head, head  # the reason, headed by the outcome
            counts[EXPECTED[key]] += 1
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == (
        str(counts[F]), str(counts[B]), str(counts[S]))
    assert ET.tostring(root)  # well-formed


def test_the_overview_row_and_chips_say_the_outcome(world: dict[str, Any]) -> None:
    page = get(world["client"], "/?per_page=200")
    for key in CASES:
        r = row(page, op_name(key))
        assert r.attrs["data-outcome"] == EXPECTED[key], op_name(key)
        badge = r.find("span", cls="outcome")
        assert badge.text() == word(key) and f"vc-{EXPECTED[key]}" in badge.classes
        # the verdict beside it never contradicts it: a not_run that is no kernel defect is not judged here
        chip = r.find("td", cls="combined").find("span", cls="verdict")
        if key[0] == "not_run" and EXPECTED[key] != F:
            assert (r.attrs["data-verdict"], chip.text()) == ("not_judged", "not judged here"), op_name(key)
        if EXPECTED[key] != F:
            assert r.attrs["data-verdict"] not in DEFECTS, op_name(key)
    chips = {a.attrs["data-outcome"]: int(a.find("span", cls="n").text())
             for a in page.find("nav", cls="counts").find_all("a", cls="outcome")}
    assert chips == {o: sum(1 for k in CASES if EXPECTED[k] == o) + (o == A) for o in (F, B, S, A)}  # + MEMORY_OP
    cases = get(world["client"], "/cases?operator=" + op_name(CASES[0])).find("div", id="op-cases")
    assert {b.text() for b in cases.find_all("span", cls="outcome")} == {word(CASES[0])}


def test_the_job_page_says_the_outcome_in_its_badge_and_each_case(world: dict[str, Any]) -> None:
    for key, job in jobs_by_key(world).items():
        page = get(world["client"], f"/jobs/{job.id}")
        status = page.find("span", id="job-status")
        assert status.text() == word(key) and f"vc-{EXPECTED[key]}" in status.classes, op_name(key)
        heads = page.find_all("span", cls="outcome")
        assert [h.text() for h in heads] == [word(key)] * 2, op_name(key)


def test_the_suite_page_counts_and_shows_the_outcomes(world: dict[str, Any]) -> None:
    page = get(world["client"], f"/suite-runs/{world['second']}")
    facts = {d.find("dd").attrs["data-outcome"]: int(d.find("dd").find("span", cls="status").text())
             for d in page.find("section", aria_labelledby="h-totals").find_all("div")
             if d.find_all("dd", cls="outcome-count")}
    assert facts == {o: 2 * sum(1 for k in SIM_CASES if EXPECTED[k] == o) for o in (F, B, S, A)}
    for tr in page.find("table", cls="results").find("tbody").find_all("tr"):
        op = tr.find("th").find("span", cls="trunc").attrs["title"]
        key = next(k for k in SIM_CASES if op_name(k) == op)
        shown = tr.find("td", data_label="Verdict").find_all("span", cls="outcome")
        assert [s.text() for s in shown] == [word(key)], op


def test_the_webhook_counts_outcomes_and_the_gate_counts_kernel_defects_only(world: dict[str, Any]) -> None:
    with world["app"].state.sessionmaker() as session:
        [delivery] = session.scalars(select(WebhookDelivery).where(WebhookDelivery.suite_run_id == world["second"]))
        payload = delivery.payload
    assert payload["outcomes"] == {vocabulary.WORDS[o]: 2 * sum(1 for k in SIM_CASES if EXPECTED[k] == o)
                                   for o in (F, B, S, A)}
    regressed = {c["operator"] for c in payload["regressions"]}
    assert regressed == {op_name(k) for k in SIM_CASES if EXPECTED[k] == F}
    assert {c["outcome_after"] for c in payload["regressions"]} == {vocabulary.WORDS[F]}
    assert "kernel defects only" in payload["gate"]


def test_a_not_run_of_each_stage_says_why_in_words() -> None:
    """The CLI, JUnit and the pages name what kept a case from running, not just 'not run'."""
    for verdict, _, stage in CASES:
        if verdict == "not_run" and stage != "sim":
            assert vocabulary.detail(verdict, stage) == f"not run ({vocabulary.STAGE_WORDS[stage]})"


def _literals(path: Path) -> list[str]:
    """A module's string constants, docstrings left out; a template's or script's whole text."""
    if path.suffix != ".py":
        return [path.read_text()]
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def test_the_words_live_in_one_place() -> None:
    """No page, CLI or client module spells an outcome word of its own (runtime/vocabulary.py has them)."""
    root = Path(__file__).resolve().parents[2]
    for folder in ("web", "client", "server", "runtime/cli"):
        for path in (root / folder).rglob("*"):
            if path.suffix not in (".py", ".html", ".js"):
                continue
            for text in _literals(path):
                for w in ("infrastructure or harness", "cannot judge here"):
                    assert w not in text, (path, w)


def test_npu_advice_only_with_an_npu_worker_online_and_memory_advice_where_memory_was_the_limit(
        world: dict[str, Any]) -> None:
    """issue 35: "Submit for an NPU run" with no NPU worker online made a job that waits; "an NPU run would
    decide" where graph verify only needed more memory sent people to hardware they did not need."""
    client = world["client"]
    undecided = op_name(("sim_output_unwritten", "sim", "compare"))  # SIM ok, maths not judged: no graph evidence
    page = get(client, f"/operators/{undecided}")
    assert "Submit for an NPU run" not in page.find("div", cls="npu-needed").text()
    assert "no NPU worker is online" in page.find("p", id="no-npu").text()
    memory = get(client, f"/operators/{MEMORY_OP}").find("div", cls="npu-needed")
    assert "--memory" in memory.text() and "NPU run would decide" not in memory.text()
    assert "more memory" in get(client, f"/cases?operator={MEMORY_OP}").find("td", cls="why").text()
    with world["app"].state.sessionmaker() as session:
        workers.heartbeat(session, "npu-1@box", "box", ["npu"], {"modes": ["npu"], "versions": versions()}, None)
        session.commit()
    online = get(client, f"/operators/{undecided}").find("div", cls="npu-needed")
    assert "Submit for an NPU run" in online.text() and not online.find_all("p", id="no-npu")
    assert "--memory" in get(client, f"/operators/{MEMORY_OP}").find("div", cls="npu-needed").text()


def test_each_max_diff_on_the_job_page_names_whose_it_is(world: dict[str, Any]) -> None:
    """issue 35: "max |diff|" named SIM's leftover bytes in the cases table and graph verify's in Metrics."""
    jobs = jobs_by_key(world)
    sim = get(world["client"], f"/jobs/{jobs[('sim_garbage_graph_ok', 'sim', 'compare')].id}")
    heads = [th.text() for th in sim.find("table", cls="cases").find("thead").find_all("th")]
    assert "SIM leftover max |diff|" in heads and "Graph verify max |diff|" in heads and "max |diff|" not in heads
    terms = [dt.text() for dt in sim.find("section", aria_label="Metrics").find_all("dt")]
    assert "graph verify max |diff|" in terms and "max |diff|" not in terms
    assert "leftover max |diff|" in [dt.text() for dt in sim.find("details", cls="raw-metrics").find_all("dt")]
    npu = get(world["client"], f"/jobs/{jobs[('precision_fail', 'npu', 'compare')].id}")
    assert "NPU max |diff|" in [th.text() for th in npu.find("table", cls="cases").find("thead").find_all("th")]
    applied = next(dd for dt, dd in zip(npu.find("section", aria_label="Metrics").find_all("dt"),
                                        npu.find("section", aria_label="Metrics").find_all("dd"))
                   if dt.text() == "NPU max |diff|")
    assert "atol 0.001, rtol 0.001" in applied.text()


def test_the_api_gives_each_operator_its_outcome(world: dict[str, Any]) -> None:
    items = world["client"].get("/api/v1/operators", headers={"X-API-Token": world["token"]},
                                params={"limit": 200}).json()["items"]
    got = {o["name"]: o["outcome"] for o in items}
    assert {op_name(k): got[op_name(k)] for k in CASES} == {op_name(k): EXPECTED[k] for k in CASES}
    # a not_run that is no kernel defect is not judged here in the API and on its operator page, never a defect
    verdict = {o["name"]: o["combined_verdict"] for o in items}
    for key in CASES:
        if key[0] == "not_run" and EXPECTED[key] != F:
            assert verdict[op_name(key)] == "not_judged", op_name(key)
            title = get(world["client"], f"/operators/{op_name(key)}").find("h1")
            assert title.find("span", cls="verdict").text() == "not judged here"
            assert title.find("span", cls="outcome").text() == word(key)


def test_an_npu_pass_or_fail_shows_atol_and_rtol_beside_it(world: dict[str, Any]) -> None:
    jobs = jobs_by_key(world)
    for key in NPU_CASES:
        cell = get(world["client"], f"/jobs/{jobs[key].id}").find("td", data_label="NPU max |diff|")
        assert cell.text().startswith("✓" if EXPECTED[key] == A else "✗") and "/ atol 0.001, rtol 0.001" in cell.text()
    suite = get(world["client"], f"/suite-runs/{world['second']}")  # SIM only: graph verify's diff, no NPU tolerance
    assert "rtol" not in suite.find("table", cls="results").find("td", data_label="Diff").text()
