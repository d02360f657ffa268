"""What was measured of a case (web/measured.py) and an operator's diagnoses said once (web/diagnoses.py), on the
real-operator-shaped reports of tests/web/realops_seed.py stored through the real services."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.migrate import upgrade
from server.services import queries, tokens
from tests.signin import sign_in
from tests.web import realops_seed
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from web import diagnoses, measured
from web.overview import case_rows

OK, FAIL, NONE = measured.OK, measured.FAIL, measured.NONE


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("measured"))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        jobs = realops_seed.add(session, app.state.blobs, settings)
        secret = tokens.create(session, "reader", ["read"])[1]
        session.commit()
    with TestClient(app, follow_redirects=False) as client:
        sign_in(client, secret)
        yield {"app": app, "client": client, "jobs": jobs}
    app.state.engine.dispose()


def cases_of(world: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    with world["app"].state.sessionmaker() as session:
        op = queries.get_operator(session, name)
        rows = case_rows(queries.case_summaries(session, [op.id])[op.id])
        session.expunge_all()
    return {c["case"]: c for c in rows}


def states(case: dict[str, Any]) -> list[str]:
    return [s.state for s in measured.of_case(case["sim"], case["npu"])]


def test_each_step_is_measured_only_as_far_as_the_case_got(world: dict[str, Any]) -> None:
    gdr = cases_of(world, "gated_delta_rule")
    # pypto stopped tracing: parsed, compile failed, nothing after it measured, no NPU
    assert states(gdr["test_gated_delta_rule[bf16-4096]"]) == [OK, FAIL, NONE, NONE, NONE]
    # SIM ran it, graph verify matched; the NPU never ran it: its precision is not measured
    assert states(gdr["test_gated_delta_rule[bf16-128]"]) == [OK, OK, OK, OK, NONE]
    # a fixture that cannot be supplied, a golden only an NPU computes: parsed, the kernel never called
    [mla] = cases_of(world, "mla_prolog").values()
    assert states(mla) == [OK, NONE, NONE, NONE, NONE]
    assert all(states(c) == [OK, NONE, NONE, NONE, NONE] for c in cases_of(world, "moe_gating").values())
    why = {s.name: s.why for s in measured.of_case(mla["sim"], mla["npu"])}
    assert why["compiled"].startswith("not measured: the kernel was never called (not run, arguments")


def test_an_operator_s_bars_count_the_cases_per_step(world: dict[str, Any]) -> None:
    bars = measured.bars([measured.of_case(c["sim"], c["npu"]) for c in cases_of(world, "gated_delta_rule").values()])
    got = {r["name"]: (r["measured"], r["failed"]) for r in bars["rows"]}
    assert got == {"parsed": (2, 0), "compiled": (2, 1), "ran": (1, 0), "graph verified": (1, 0), "NPU precision": (0, 0)}
    page = parse(world["client"].get("/operators/gated_delta_rule").text)
    drawn = {g.attrs["data-step"]: g.attrs["data-measured"] for g in page.find("figure", id="measured").find_all("g")}
    assert drawn == {name: str(n) for name, (n, _) in got.items()}
    job = parse(world["client"].get(f"/jobs/{world['jobs']['gated_delta_rule']}").text)
    cells = job.find("table", cls="cases").find("tbody").find("tr").find("svg", cls="measured").find_all("rect")
    assert [c.attrs["class"] for c in cells] == ["m-ok", "m-fail", "m-none", "m-none", "m-none"]


def test_cases_with_one_diagnosis_are_listed_once_worst_first(world: dict[str, Any]) -> None:
    swiglu = diagnoses.group(list(cases_of(world, "swiglu").values()))
    assert len(swiglu) == 1 and len(swiglu[0]["cases"]) == 3 and swiglu[0]["outcome"] == "acceptable"
    gdr = diagnoses.group(list(cases_of(world, "gated_delta_rule").values()))
    assert [g["outcome"] for g in gdr] == ["failed", "acceptable"]
    assert gdr[0]["rules"] == ["vec-tile-shape-not-set"] and "set_vec_tile_shapes" in gdr[0]["fix"]
    assert "tile shape not set" in gdr[0]["why"]  # the error, not the combined verdict's bare id
    [mla] = diagnoses.group(list(cases_of(world, "mla_prolog").values()))
    assert mla["what"] == "SIM: not run (an argument crosscheck cannot supply)"
    assert "fixture 'mla_weights_cache' not found" in mla["why"]
    page = parse(world["client"].get("/operators/swiglu").text)
    assert len(page.find("section", id="diagnosis").find_all("article")) == 1


def test_a_crash_is_a_run_that_failed_and_a_pending_result_measured_nothing() -> None:
    crashed = {"verdict": "crash", "structural": "ok", "kernel_launches": 1, "graph_status": None, "job_id": 7}
    assert [s.state for s in measured.of_job_case(crashed, "sim")] == [OK, OK, FAIL, NONE, NONE]
    assert [s.state for s in measured.of_case(None, None)] == [NONE] * 5
    npu = {"verdict": "precision_fail", "structural": "ok", "kernel_launches": 1, "max_abs_diff": 0.5}
    assert [s.state for s in measured.of_job_case(npu, "npu")] == [OK, OK, OK, NONE, FAIL]
