"""The operator page (history chart, cost trend, cases) and the job page (evidence), parsed."""
from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.web.test_overview import FLAG_TEXT, get


def test_history_chart_has_one_series_per_mode_on_a_log_scale(client: TestClient) -> None:
    page = get(client, "/operators/scale_add")
    chart = page.find("svg", id="history-chart")
    series = {g.attrs["data-series"]: g for g in chart.find_all("g", cls="series")}
    assert set(series) == {"SIM raw", "graph verify", "NPU"}
    assert len(series["SIM raw"].find_all("circle")) == 3 and len(series["NPU"].find_all("circle")) == 2
    # SIM's 1e35 is garbage: clamped into the band, not stretching the scale to 1e36.
    assert len(series["SIM raw"].find_all("circle", cls="garbage")) == 3
    assert chart.find("g", cls="band").find("text").text() == "≥ 1e6: garbage"
    # graph verify matched exactly: drawn on the bottom "0" line, said so in the tooltip.
    zero = series["graph verify"].find_all("circle", cls="zero")
    assert len(zero) == 3 and "0 (exact)" in zero[0].find("title").text()
    labels = [t.text() for t in chart.find("g", cls="grid").find_all("text")]
    assert "0" in labels and "1e36" not in labels and "1e-3" in labels
    assert chart.find("g", cls="tolerance").find("text").text() == "atol 0.001"
    assert "log" in chart.find("desc").text()
    # A submission's SIM and NPU runs share a slot: side by side, a few pixels apart.
    sim_x = sorted(float(c.attrs["cx"]) for c in series["SIM raw"].find_all("circle"))
    npu_x = sorted(float(c.attrs["cx"]) for c in series["NPU"].find_all("circle"))
    assert [round(n - s) for s, n in zip(sim_x, npu_x)] == [16, 16]


def test_cost_trend_and_data_table(client: TestClient) -> None:
    page = get(client, "/operators/scale_add")
    assert len(page.find("svg", id="time-chart").find_all("circle")) == 3
    assert len(page.find("svg", id="util-chart").find_all("circle")) == 3
    table = page.find("details", cls="data").find("table")
    assert len(table.find("tbody").find_all("tr")) == 5


def test_operator_cases_table(client: TestClient) -> None:
    page = get(client, "/operators/scale_add")
    assert FLAG_TEXT in page.find("p", cls="flag-note").text()
    cases = page.find("table", cls="cases").find("tbody").find_all("tr")
    assert [c.find("th").text() for c in cases] == ["scale_add_32x64", "scale_add_64x256"]
    assert all("flagged" in c.classes for c in cases)
    assert len(page.find("ul", cls="joblist").find_all("li")) == 5


def test_one_run_is_a_compact_figure_without_an_npu_row(client: TestClient) -> None:
    page = get(client, "/operators/wrong_maths")
    figure = page.find("figure", id="history-chart")  # one SIM run: numbers, not half a screen of axes
    assert not page.find_all("svg", id="history-chart")
    facts = {dt.text(): dd.text() for dt, dd in zip(figure.find_all("dt"), figure.find_all("dd"))}
    assert facts == {"SIM raw": "10^27 · SIM garbage", "graph verify": "✗ 3.91", "tolerance": "atol 0.001"}


def test_unknown_operator_is_an_html_404(client: TestClient) -> None:
    assert "no operator" in get(client, "/operators/nope", status=404).find("p", cls="detail").text()


def test_job_page_of_the_flag(client: TestClient, info: dict[str, Any]) -> None:
    job_id = info["flag_jobs"][0].id
    page = get(client, f"/jobs/{job_id}")
    assert page.find("span", id="job-status").text() == "acceptable"  # the verdict class (runtime.vocabulary)
    case_rows = page.find("table", cls="cases").find("tbody").find_all("tr")
    assert len(case_rows) == 2
    stages = [s.find("span", cls="stg-name").text() for s in case_rows[0].find_all("span", cls="stg")]
    assert stages == ["syntax", "lint", "golden", "sim", "graph verify", "compare"]
    section = page.find("section", id="case-scale_add_64x256")
    assert FLAG_TEXT in section.find("p", cls="flag-note").text()
    assert section.find("pre", cls="cmd").text() == "crosscheck run scale_add.zip --mode sim --case scale_add_64x256"
    lanes = section.find("svg", cls="lanes")
    assert len(lanes.find_all("g", cls="lane-aiv")) == 8 and len(lanes.find_all("rect")) == 8
    download = section.find("a", cls="button")
    assert download.attrs["href"] == (f"/api/v1/jobs/{job_id}/artifacts/"
                                      "artifacts-attempt1/001-scale_add_64x256/launch0/merged_swimlane.json")
    assert client.get(download.attrs["href"]).json()["traceEvents"]
    logs = {d.find("summary").text().split()[0]: d for d in section.find_all("details", cls="log")}
    assert {"stdout", "stderr", "plog", "Artifacts"} <= set(logs)
    assert "Failed to open file" in logs["stderr"].find("pre").text()


def test_job_page_diagnosis_card_shows_the_offending_line(client: TestClient, info: dict[str, Any]) -> None:
    page = get(client, f"/jobs/{info['structural_jobs'][0].id}")
    card = page.find("article", cls="diag")
    assert card.find("h3").find("code").text() == "vec-tile-shape-not-set"
    text = card.text()
    assert "Cause." in text and "Fix." in text and "set_vec_tile_shapes" in text
    # The lint finding above already shows line 18: one excerpt per page, the card points back to it.
    assert "line 18 (excerpt shown above)" in card.find("p", cls="footnote").text()
    assert not card.find_all("figure", cls="source")
    source = page.find("article", cls="lint").find("figure", cls="source")
    assert len(page.find_all("figure", cls="source")) == 1
    assert "missing_vec_tiles_impl.py" in source.find("figcaption").text()
    hit = source.find("span", cls="hit")
    assert hit.find("span", cls="no").text() == "18" and "out[:] = x * 2.0 + y" in hit.text()
    assert len(source.find_all("span", cls="ln")) == 7  # three lines either side


def test_job_page_lint_findings_with_source(client: TestClient, info: dict[str, Any]) -> None:
    page = get(client, f"/jobs/{info['fake_jobs'][0].id}")
    cards = page.find_all("article", cls="lint")
    rules = [c.find("h3").find("code").text() for c in cards]
    assert rules == ["ops-before-vec-tiles", "golden-fallback"]
    hit = cards[1].find("span", cls="hit")
    assert "return torch.sigmoid(x)" in hit.text()


def test_queued_job_shows_its_queue_position_and_refreshes_without_js(client: TestClient, info: dict[str, Any]) -> None:
    response = client.get(f"/jobs/{info['queued_jobs'][0].id}")
    page = parse_ok(response)
    live = page.find("section", id="live")
    assert "position 1 in the sim queue" in live.text()
    noscript = page.find("noscript")
    assert noscript.find("meta").attrs["http-equiv"] == "refresh"


def test_finished_job_does_not_refresh(client: TestClient, info: dict[str, Any]) -> None:
    page = get(client, f"/jobs/{info['flag_jobs'][0].id}")
    assert not page.find_all("noscript") and not page.find_all("section", id="live")


def test_unknown_and_bad_job_ids(client: TestClient) -> None:
    assert "no job 99999" in get(client, "/jobs/99999", status=404).find("p", cls="detail").text()
    assert "job_id" in get(client, "/jobs/abc", status=422).find("p", cls="detail").text()


def test_workers_page(client: TestClient) -> None:
    page = get(client, "/workers")
    worker = page.find("table", cls="workers").find("tbody").find("tr")
    assert "online" in worker.classes
    text = worker.text()
    assert "sim-worker-1@vm" in text and "✓ ready" in text and "pypto 0.2.0" in text
    queues = {d.find("dt").text(): d.find("dd").text() for d in page.find("dl", cls="facts").find_all("div")}
    assert queues["SIM"].startswith("1 queued") and queues["Workers online"] == "1 of 1"


def test_suite_runs_page_says_how_to_start_one(client: TestClient) -> None:
    main = get(client, "/suites").find("main")
    assert "No suite has run yet" in main.text() and "crosscheck ci run" in main.find("pre").text()


def parse_ok(response: Any) -> Any:
    from tests.web.html import parse

    assert response.status_code == 200
    return parse(response.text)


def test_history_range_a_year_draws_the_same_runs_and_says_which_range(client: TestClient) -> None:
    page = get(client, "/operators/scale_add?range=1y")
    chart = page.find("svg", id="history-chart")
    series = {g.attrs["data-series"]: g for g in chart.find_all("g", cls="series")}
    assert len(series["SIM raw"].find_all("circle")) == 3 and len(series["NPU"].find_all("circle")) == 2
    current = [a for a in page.find("nav", cls="ranges").find_all("a") if a.attrs.get("aria-current")]
    assert [a.text() for a in current] == ["a year"]


def test_unknown_history_range_is_refused(client: TestClient) -> None:
    page = get(client, "/operators/scale_add?range=forever", status=422)
    assert "range" in page.text()
