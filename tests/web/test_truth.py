"""Issue 11, "truth at a glance": coverage beside every mode summary, deciding evidence first,
fake passes and rejected stages never drawn healthy, benign log lines as a footnote."""
from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.web.test_overview import get, row
from tests.signin import sign_in


def test_partial_npu_coverage_is_said_and_never_overstated(client: TestClient) -> None:
    r = row(get(client, "/"), "softmax_partial")
    # One of two cases ran on an NPU: the operator does not read "NPU ok".
    assert r.attrs["data-verdict"] == "sim_garbage_graph_ok"
    npu = r.find("td", data_label="NPU diff / tol")
    cover = npu.find("span", cls="cover")
    assert cover.text() == "NPU 1/2 cases" and "partial" in cover.classes
    assert r.find("td", data_label="Graph verify").find("span", cls="cover").text() == "graph 2/2 cases"
    assert "NPU 1/2 cases" in r.find("details").find("summary").text()


def test_operator_page_shows_coverage_beside_each_mode(client: TestClient) -> None:
    page = get(client, "/operators/softmax_partial")
    assert page.find("h1").find("span", cls="verdict").text() == "⚑ SIM garbage · graph ok"
    facts = {d.find("dt").text(): d.find("dd") for d in page.find("dl", cls="facts").find_all("div")}
    assert facts["NPU diff / tol"].find("span", cls="cover").text() == "NPU 1/2 cases"
    cases = page.find("table", cls="cases").find("tbody").find_all("tr")
    assert [c.find_all("td")[0].text() for c in cases] == ["acceptable ⚑ SIM garbage · NPU ok",
                                                            "acceptable ⚑ SIM garbage · graph ok"]
    assert cases[1].find_all("td")[2].text() == "—"  # no NPU result for the second case


def test_coverage_page_is_operators_by_modes(client: TestClient) -> None:
    page = get(client, "/coverage")
    rows = {tr.attrs["data-operator"]: tr for tr in page.find("table", cls="coverage").find("tbody").find_all("tr")}
    cells = {td.attrs["data-mode"]: td.text() for td in rows["softmax_partial"].find_all("td") if "data-mode" in td.attrs}
    assert cells == {"sim": "SIM 2/2 cases", "graph": "graph 2/2 cases", "npu": "NPU 1/2 cases"}
    assert rows["wrong_maths"].find("td", data_mode="npu").text() == "NPU 0/2 cases"
    assert "partial" in rows["softmax_partial"].find("td", data_mode="npu").find("span").classes


def test_a_fake_pass_graph_verify_is_not_a_healthy_zero(client: TestClient, info: dict[str, Any]) -> None:
    cell = row(get(client, "/"), "golden_fallback").find("td", data_label="Graph verify")
    text = cell.text()
    assert "failed: output identical to the golden but not written by the kernel" in text
    assert "✓" not in text and "bad" in cell.find("span").classes
    job = get(client, f"/jobs/{info['fake_jobs'][0].id}")
    assert "not written by the kernel" in job.find("table", cls="cases").find("tbody").find("tr").text()


def test_sim_garbage_on_a_defect_is_neutral_and_second(client: TestClient) -> None:
    r = row(get(client, "/"), "wrong_maths")
    garbage = r.find("span", cls="garbage")
    assert "neutral" in garbage.classes and "not a kernel defect" not in garbage.attrs["title"]
    labels = [td.attrs["data-label"] for td in r.find("tr").find_all("td")]
    # The deciding evidence leads; SIM's raw diff comes after it.
    assert labels.index("Outcome · verdict") < labels.index("Graph verify") < labels.index("SIM diff")
    assert labels.index("NPU diff / tol") < labels.index("SIM diff")


def test_job_metrics_lead_with_the_verdict_and_the_deciding_evidence(client: TestClient) -> None:
    op = get(client, "/operators/wrong_maths")
    job_href = op.find("table", cls="cases").find("tbody").find("a").attrs["href"].split("#")[0]
    section = get(client, job_href).find("section", id="case-wrong_maths_32x64")
    metrics = section.find("section", aria_label="Metrics").find("dl", cls="kv")
    terms = [dt.text() for dt in metrics.find_all("dt")]
    assert terms[:3] == ["verdict", "decided by", "graph verify max |diff|"]  # evidence named by its source
    values = [dd.text() for dd in metrics.find_all("dd")]
    assert values[0] == "graph fail" and values[1].startswith("graph verify: ✗ 3.83")
    assert values[2].startswith("3.83") and values[3].startswith("99.8 %")
    raw = section.find("details", cls="raw-metrics")  # the garbage: second, collapsed, neutral
    assert "neutral" in raw.find("summary").find("span", cls="garbage").classes
    assert "no evidence either way" in raw.text()


def test_stage_bar_draws_graph_verify_and_rejected_stages(client: TestClient, info: dict[str, Any]) -> None:
    def stages(job_id: int) -> dict[str, set[str]]:
        tr = get(client, f"/jobs/{job_id}").find("table", cls="cases").find("tbody").find("tr")
        return {s.find("span", cls="stg-name").text(): s.classes for s in tr.find_all("span", cls="stg")}

    fake = stages(info["fake_jobs"][0].id)
    assert {"stg-graph", "stg-rejected"} <= fake["graph verify"]
    assert "stg-rejected" in fake["compare"] and "stg-ok" not in fake["compare"]
    assert "stg-findings" in fake["lint"]  # golden-fallback was found: not a green lint stage
    flag = stages(info["flag_jobs"][0].id)
    assert {"stg-graph", "stg-ok"} <= flag["graph verify"] and "stg-ok" in flag["compare"]


def test_benign_log_lines_are_a_footnote_not_a_card(client: TestClient, info: dict[str, Any]) -> None:
    sim_job = info["partial_jobs"][0]
    section = get(client, f"/jobs/{sim_job.id}").find("section", id="case-scale_add_64x256")
    assert not section.find_all("article", cls="diag")
    assert section.find("p", cls="footnote").text() == "1 benign pypto log line hidden"
    op = get(client, "/operators/softmax_partial")
    assert "noise-" not in op.find("table", cls="cases").text()


def test_cost_model_with_no_work_is_called_out() -> None:
    from web import evidence

    assert "0 tasks / 0 µs" in evidence.cost_warning({"aic_tasks": 0, "aiv_tasks": 0, "aicore_time_us": 0})
    assert evidence.cost_warning({"aic_tasks": 0, "aiv_tasks": 1, "aicore_time_us": 1.96}) == ""


def test_reproduce_works_from_what_the_user_has(client: TestClient, app: Any, info: dict[str, Any]) -> None:
    from server.services import tokens

    job = info["flag_jobs"][0]
    section = get(client, f"/jobs/{job.id}").find("section", id="case-scale_add_32x64")
    # A reader who did not submit it gets the command for their own folder, and no download link.
    assert "the folder works as well as the archive (scale_add.zip)" in section.find("p", cls="reproduce").text()
    assert not section.find("p", cls="reproduce").find_all("a")
    with app.state.sessionmaker() as session:
        admin = tokens.create(session, "admin-reproduce", ["read", "admin"])[1]
        session.commit()
    sign_in(client, admin)
    section = get(client, f"/jobs/{job.id}").find("section", id="case-scale_add_32x64")
    link = section.find("p", cls="reproduce").find("a")
    response = client.get(link.attrs["href"])
    assert response.status_code == 200 and response.content[:2] == b"PK"  # the stored zip, byte for byte
    assert "scale_add.zip" in response.headers["content-disposition"]
    perfetto = [a for a in section.find_all("a") if a.text() == "Perfetto"]
    assert perfetto and perfetto[0].attrs["href"].startswith("https://ui.perfetto.dev")


def test_no_online_worker_for_a_mode_is_said_everywhere(client: TestClient, info: dict[str, Any]) -> None:
    submit = get(client, "/submit").find("p", cls="no-worker")
    assert submit.attrs["data-mode"] == "npu"
    assert submit.text().startswith("No online worker serves npu: none has ever reported")
    job = get(client, f"/jobs/{info['npu_waiting_jobs'][0].id}")
    assert "No online worker serves npu" in job.find("p", cls="no-worker").text()
    workers = get(client, "/workers")
    assert [p.attrs["data-mode"] for p in workers.find_all("p", cls="no-worker")] == ["npu"]
    # SIM is served: no warning on a queued SIM job.
    assert not get(client, f"/jobs/{info['queued_jobs'][0].id}").find_all("p", cls="no-worker")


def test_last_seen_and_removing_a_stale_worker(client: TestClient, app: Any) -> None:
    from datetime import timedelta

    from server.models import Worker
    from server.models.base import utcnow
    from server.services import tokens, workers

    with app.state.sessionmaker() as session:
        workers.heartbeat(session, "npu-old@box", "box", ["npu"], {"modes": ["npu"]}, None, 3)
        session.get(Worker, "npu-old@box").last_heartbeat = utcnow() - timedelta(hours=3)
        admin = tokens.create(session, "admin-test", ["read", "admin"])[1]
        session.commit()
    try:
        text = get(client, "/submit").find("p", cls="no-worker").text()
        assert text.startswith("No online worker serves npu: one was last seen 3 h ago")
        sign_in(client, admin)
        row = next(tr for tr in get(client, "/workers").find("table", cls="workers").find("tbody").find_all("tr")
                   if "npu-old@box" in tr.text())
        form = row.find("form")
        assert "3 h ago" in row.text() and form.attrs["action"] == "/workers/npu-old%40box/remove"
        assert client.post(form.attrs["action"]).status_code == 303
        assert "npu-old@box" not in get(client, "/workers").text()
        online = get(client, "/workers").find("table", cls="workers").find("tbody").find("tr")
        assert "online" in online.classes and not online.find_all("form")  # online workers stay
        assert client.post("/workers/sim-worker-1%40vm/remove").status_code == 409
    finally:
        with app.state.sessionmaker() as session:
            if session.get(Worker, "npu-old@box"):
                session.delete(session.get(Worker, "npu-old@box"))
                session.commit()


def test_login_says_where_crosscheck_up_keeps_the_admin_token(anon: TestClient) -> None:
    from tests.web.html import parse

    text = parse(anon.get("/login").text).find("p", cls="local-token").text()
    assert "crosscheck up" in text and "tokens.json" in text and "crosscheck-data" in text and "['admin']" in text


def test_overview_refreshes_itself_while_jobs_run(client: TestClient) -> None:
    page = get(client, "/")  # the seed leaves a SIM job queued
    live = page.find("p", id="overview-live")
    assert "queued or running: this page refreshes itself" in live.text()
    assert page.find("noscript").find("meta").attrs["http-equiv"] == "refresh"


def test_submit_page_takes_a_folder(client: TestClient) -> None:
    folder = get(client, "/submit").find("input", id="s-folder")
    assert "webkitdirectory" in folder.attrs and "multiple" in folder.attrs


def test_a_fake_pass_is_diagnosed_by_its_own_rules_at_the_stage_that_failed(client: TestClient,
                                                                            info: dict[str, Any]) -> None:
    op = get(client, "/operators/golden_fallback")
    rules = [c.text() for c in op.find("table", cls="cases").find("tbody").find("td", cls="rules").find_all("code")]
    assert rules[:2] == ["golden-fallback", "output-not-written"] and "graph-verify-mismatch" not in rules
    cards = get(client, f"/jobs/{info['fake_jobs'][0].id}").find_all("article", cls="diag")
    heads = [c.find("h3").text() for c in cards]
    assert heads[0] == "golden-fallback at stage graph_verify"
    assert all("at stage graph_verify" in h for h in heads)


def test_the_api_says_how_many_cases_each_mode_judged(client: TestClient, info: dict[str, Any]) -> None:
    headers = {"X-API-Token": info["read_token"]}
    items = {o["name"]: o for o in client.get("/api/v1/operators", headers=headers).json()["items"]}
    assert items["softmax_partial"]["coverage"] == {"cases": 2, "sim": 2, "graph": 2, "npu": 1}
    assert items["softmax_partial"]["combined_verdict"] == "sim_garbage_graph_ok"
    detail = client.get("/api/v1/operators/wrong_maths", headers=headers).json()
    assert detail["operator"]["coverage"] == {"cases": 2, "sim": 2, "graph": 2, "npu": 0}


def test_a_job_whose_kernel_is_wrong_did_not_fail_to_run(client: TestClient, info: dict[str, Any]) -> None:
    status = get(client, f"/jobs/{info['fake_jobs'][0].id}").find("span", id="job-status")
    assert status.text() == "kernel defect" and "vc-failed" in status.classes  # as the CLI says it


def test_the_chart_data_table_does_not_show_a_fake_pass_as_zero(client: TestClient) -> None:
    table = get(client, "/operators/golden_fallback").find("details", cls="data").find("tbody")
    graph = table.find("tr").find_all("td")[4]
    assert "not written by the kernel" in graph.text() and graph.text() != "0"


def test_npu_kernel_time_is_on_the_job_page_only_where_it_was_measured(client: TestClient,
                                                                      info: dict[str, Any]) -> None:
    sim_job, npu_job = info["partial_jobs"]
    assert npu_job.mode == "npu"
    timed = get(client, f"/jobs/{npu_job.id}").find("dd", cls="kernel-time")
    assert timed.text() == "median 42 µs · IQR 41–43 µs · spread 4.76 % · 5 runs after 3 warmup"
    assert get(client, f"/jobs/{sim_job.id}").find_all("dd", cls="kernel-time") == []
