"""Results belong to their owners (issue 33): what one tenant's tokens can and cannot do to another's
operators, suites, suite runs, baselines and webhooks, through real HTTP on both databases."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import sqlalchemy as sa

from server.models import AuditEvent, CaseResult, Operator, SuiteRun, WebhookDelivery
from server.services import tokens
from tests.server.conftest import npu_report

NPU_ENV = {"pypto": "0.2.0", "torch": "2.13.0", "cann": "8.0.RC3", "device": "npu:3"}
HOOK = "http://192.0.2.10/hooks/crosscheck"  # TEST-NET-1: queued, never sent here


@pytest.fixture
def who(app) -> dict[str, dict[str, str]]:
    """Two tenants' CI tokens (submit + upload) and an admin's."""
    out = {}
    with app.state.sessionmaker.begin() as session:
        for name, scopes in (("lab-a", ["submit", "upload"]), ("lab-b", ["submit", "upload"]), ("root", ["admin"])):
            out[name] = {"Authorization": f"Bearer {tokens.create(session, name, scopes)[1]}"}
    return out


def upload(client, headers, report: dict[str, Any], suite: str, run_key: str):
    return client.post("/api/v1/ingest/report", params={"suite": suite, "run_key": run_key},
                       content=json.dumps(report), headers={**headers, "Content-Type": "application/json"})


def npu(sim_report, verdict: str = "pass") -> dict[str, Any]:
    report = npu_report(sim_report, {c["case"]: verdict for c in sim_report["cases"]},
                        max_abs_diff=1e-4 if verdict == "pass" else 3.83)
    report["environment"].update(NPU_ENV)
    return report


def stored(app) -> int:
    with app.state.sessionmaker() as s:
        return int(s.scalar(sa.select(sa.func.count()).select_from(CaseResult)) or 0)


def test_an_upload_never_stores_a_sim_pass(client, who, app, sim_report):
    forged = copy.deepcopy(sim_report)
    for case in forged["cases"]:  # a pass whose numbers agree with it: only the mode gives it away
        case.update(verdict="pass", precision="pass", output_written=True)
        case["metrics"] = dict(case["metrics"] or {}, max_abs_diff=0.0, atol=1e-3, rtol=1e-3, mismatch_count=0,
                               mismatch_ratio=0.0, nan_count=0, inf_count=0, shape_match=True, dtype_match=True)
    r = upload(client, who["lab-a"], forged, "a-nightly", "p1")
    assert r.status_code == 422 and "SIM pass" in r.json()["detail"]
    assert stored(app) == 0


def test_a_tenant_cannot_upload_onto_another_tenants_operator_or_suite(client, who, app, sim_report):
    assert upload(client, who["lab-a"], npu(sim_report, "precision_fail"), "a-nightly", "p1").status_code == 200
    before = client.get("/api/v1/operators/scale_add", headers=who["lab-a"]).json()["operator"]
    assert before["combined_verdict"] != "pass" and before["uploaded_cases"] == len(sim_report["cases"])
    # Into A's suite run by its key, into a new run of A's suite, onto A's operator through a suite of its own.
    for suite, key, needle in (("a-nightly", "p1", "suite 'a-nightly' belongs to 'lab-a'"),
                               ("a-nightly", "p2", "suite 'a-nightly' belongs to 'lab-a'"),
                               ("b-nightly", "p1", "operator 'scale_add' belongs to 'lab-a'")):
        r = upload(client, who["lab-b"], npu(sim_report, "pass"), suite, key)
        assert r.status_code == 403 and needle in r.json()["detail"], r.text
    after = client.get("/api/v1/operators/scale_add", headers=who["lab-a"]).json()["operator"]
    assert after["combined_verdict"] == before["combined_verdict"]
    with app.state.sessionmaker() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(SuiteRun)) == 1  # B's refused run left nothing
        assert s.scalar(sa.select(Operator.owner).where(Operator.name == "scale_add")) == "lab-a"
    # An admin's token may (an NPU lab the admin runs), and every stored upload is audited.
    assert upload(client, who["root"], npu(sim_report, "pass"), "a-nightly", "p3").status_code == 200
    events = client.get("/api/v1/audit", params={"action": "results.upload"}, headers=who["root"]).json()["items"]
    assert sorted(e["actor"] for e in events) == ["lab-a", "root"]


def test_a_tenant_cannot_submit_into_another_tenants_suite_run(client, who, app):
    run = client.post("/api/v1/suite-runs", json={"suite": "a-nightly", "run_key": "p1"}, headers=who["lab-a"])
    assert run.status_code == 201
    body = {"files": {"kernel.py": "import pypto\n"}, "suite_run_id": run.json()["id"]}
    r = client.post("/api/v1/submissions", json=body, headers=who["lab-b"])
    assert r.status_code == 403 and "belongs to 'lab-a'" in r.json()["detail"]
    # Nor open a run of A's suite (its runs are A's baselines and decide A's gate).
    r = client.post("/api/v1/suite-runs", json={"suite": "a-nightly", "run_key": "p2"}, headers=who["lab-b"])
    assert r.status_code == 403 and "suite 'a-nightly' belongs to 'lab-a'" in r.json()["detail"]
    with app.state.sessionmaker() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(SuiteRun)) == 1


def test_baselines_and_webhooks_come_from_the_suite_owners_runs_only(client, who, app, sim_report):
    assert upload(client, who["lab-a"], npu(sim_report, "pass"), "a-nightly", "a1").status_code == 200
    hook = client.patch("/api/v1/suites/a-nightly", json={"webhook_url": HOOK}, headers=who["root"])
    assert hook.status_code == 200, hook.text
    # Someone else's runs in A's suite (an admin's here; before suites had owners, any tenant's).
    other1 = upload(client, who["root"], npu(sim_report, "precision_fail"), "a-nightly", "r1").json()
    other2 = upload(client, who["root"], npu(sim_report, "pass"), "a-nightly", "r2").json()
    mine = upload(client, who["lab-a"], npu(sim_report, "precision_fail"), "a-nightly", "a2").json()
    runs = {r["run_key"]: r for r in client.get("/api/v1/suite-runs", headers=who["lab-a"]).json()["items"]}
    assert runs["a2"]["previous_run_id"] == runs["a1"]["id"]  # not r2, the newest run before it
    assert runs["r1"]["previous_run_id"] is None
    with app.state.sessionmaker() as s:
        hooks = {d.suite_run_id for d in s.scalars(sa.select(WebhookDelivery))}
    assert hooks == {mine["suite_run_id"]}, (other1, other2)  # the admin's own regressions sent nothing


def test_uploaded_verdicts_are_marked_on_the_overview_and_the_operator_page(client, who, sim_report):
    assert upload(client, who["lab-a"], npu(sim_report, "pass"), "a-nightly", "a1").status_code == 200
    client.post("/login", data={"token": who["lab-a"]["Authorization"].split()[1]})
    for page in ("/", "/operators/scale_add"):
        html = client.get(page).text
        assert 'class="prov uploaded"' in html, page
