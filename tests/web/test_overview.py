"""The overview: the matrix, the flag, filters, pagination and bad input, parsed from the HTML."""
from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event

from tests.web.html import Node, parse
from tests.web.seed import LONG_NAME

FLAG_TEXT = "The simulator does not write outputs on CPU hosts, so this is not a kernel defect."


def rows(page: Node) -> list[Node]:
    return page.find_all("tbody", cls="op")


def names(page: Node) -> list[str]:
    return [r.attrs["data-operator"] for r in rows(page)]


def row(page: Node, name: str) -> Node:
    return next(r for r in rows(page) if r.attrs["data-operator"] == name)


def get(client: TestClient, url: str, status: int = 200) -> Node:
    response = client.get(url)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("text/html")
    return parse(response.text)


def test_real_defects_sort_above_flagged_rows(client: TestClient) -> None:
    page = get(client, "/")
    verdicts = [r.attrs["data-verdict"] for r in rows(page)]
    assert verdicts == ["kernel_defect", "kernel_defect", "suspect_fake_pass", "structural_error",
                        "sim_garbage_npu_ok", "sim_garbage_graph_ok", "sim_garbage_graph_ok"]


def test_flagged_rows_carry_the_explanation(client: TestClient) -> None:
    page = get(client, "/")
    for name in ("scale_add", "relu_like"):
        r = row(page, name)
        assert "flagged" in r.classes
        assert FLAG_TEXT in r.find("p", cls="flag-note").text()
    for name in ("wrong_maths", "missing_vec_tiles", "golden_fallback"):
        assert not row(page, name).find_all("p", cls="flag-note")


def test_sim_garbage_is_shown_as_an_order_of_magnitude(client: TestClient) -> None:
    r = row(get(client, "/"), "scale_add")
    garbage = r.find("span", cls="garbage")
    assert garbage.text() == "10^35 · SIM garbage (NaN ×16,384)"  # runtime.numbers.sim_diff_text
    assert "not a kernel defect" in garbage.attrs["title"]
    assert r.find("span", cls="garbage-nan").text().strip() == "(NaN ×16,384)"  # inside the garbage tag


def test_columns_show_graph_npu_verdict_and_cost(client: TestClient) -> None:
    cells = row(get(client, "/"), "scale_add").find("tr").find_all("td")
    by_label = {c.attrs["data-label"]: c.text() for c in cells}
    assert by_label["SIM structure"] == "✓ runs SIM 2/2 cases"
    assert by_label["Graph verify"] == "✓ 0 graph 2/2 cases"
    assert by_label["NPU diff / tol"] == "✓ 1.50e-4 / 0.001 NPU 2/2 cases"
    assert by_label["Outcome · verdict"] == "acceptable ⚑ SIM garbage · NPU ok"
    assert by_label["AICore µs"] == "4.11"
    assert get(client, "/").find("time").attrs["datetime"].endswith("+00:00")


def test_defects_are_marked(client: TestClient) -> None:
    page = get(client, "/")
    assert row(page, "wrong_maths").find("td", data_label="Graph verify").text() == "✗ 3.91 graph 2/2 cases"
    assert row(page, LONG_NAME).find("td", data_label="NPU diff / tol").text() == "✗ 2.4 / 0.001 NPU 2/2 cases"
    assert row(page, "missing_vec_tiles").find("td", data_label="SIM structure").text() == "✗ structural error SIM 1/1 case"
    # An exact match of a fake pass is evidence, not garbage.
    fake = row(page, "golden_fallback").find("td", data_label="SIM diff")
    assert fake.text() == "0" and not fake.find_all(cls="garbage")


def test_cases_expand_with_links_to_their_jobs(client: TestClient) -> None:
    """A row's case table is loaded when opened, from the page its link names (readable without JavaScript)."""
    details = row(get(client, "/"), "scale_add").find("details")
    assert details.find("summary").text().startswith("2 cases")
    [link] = details.find_all("a")
    assert details.attrs["data-cases"] == link.attrs["href"] == "/cases?operator=scale_add"
    table = get(client, link.attrs["href"]).find("div", id="op-cases")
    links = [a.attrs["href"] for a in table.find_all("a")]
    assert len(links) == 2 and all(h.startswith("/jobs/") and "#case-scale_add_" in h for h in links)


def test_a_row_s_cases_page_answers_bad_names_clearly(client: TestClient) -> None:
    assert "no operator" in get(client, "/cases?operator=no_such_op", status=404).find("p", cls="detail").text()
    assert "operator" in get(client, "/cases", status=422).find("p", cls="detail").text()


def test_outcome_counts_link_to_filters(client: TestClient) -> None:
    """Four chips, the outcomes of runtime/vocabulary.py; each filters the rows whose worst case has it."""
    counts = get(client, "/").find("nav", cls="counts")
    chips = {a.attrs["data-outcome"]: a for a in counts.find_all("a", cls="outcome")}
    assert list(chips) == ["failed", "broken", "skipped", "acceptable"]
    link = chips["failed"]
    assert link.attrs["href"] == "/?outcome=failed" and "kernel defect" in link.text()
    shown = names(get(client, link.attrs["href"]))
    assert int(link.find("span", cls="n").text()) == len(shown) > 0
    assert "wrong_maths" in shown and "scale_add" not in shown
    assert "scale_add" in names(get(client, chips["acceptable"].attrs["href"]))
    assert names(get(client, "/?verdict=sim_garbage_npu_ok")) == ["scale_add"]  # the verdict filter stays


def test_filters(client: TestClient) -> None:
    assert names(get(client, "/?q=maths")) == ["wrong_maths"]
    assert sorted(names(get(client, "/?branch=feature/tiles"))) == sorted([LONG_NAME, "missing_vec_tiles", "relu_like"])
    assert "wrong_maths" in names(get(client, "/?author=alice"))
    assert names(get(client, "/?mode=npu")) == [LONG_NAME, "scale_add", "softmax_partial"]
    assert len(names(get(client, "/?since=24h"))) == 7
    multi = get(client, "/?verdict=kernel_defect&verdict=structural_error")
    assert set(names(multi)) == {LONG_NAME, "wrong_maths", "missing_vec_tiles"}


def test_filter_form_controls_are_labelled(client: TestClient) -> None:
    form = get(client, "/").find("form", cls="filters")
    labels = {lab.attrs["for"] for lab in form.find_all("label")}
    controls = [c for c in form.find_all("input") + form.find_all("select") if c.attrs.get("type") != "hidden"]
    assert controls and all(c.attrs["id"] in labels for c in controls)


def test_pagination(client: TestClient) -> None:
    page = get(client, "/?per_page=2")
    assert len(rows(page)) == 2
    pager = page.find("nav", cls="pager")
    assert "Page 1 of 4" in pager.text()
    next_link = pager.find("a", rel="next").attrs["href"]
    assert "page=2" in next_link and "per_page=2" in next_link
    assert names(get(client, next_link)) == ["golden_fallback", "missing_vec_tiles"]
    assert rows(get(client, "/?per_page=2&page=99")) == []


def test_long_names_are_truncated_with_the_full_name_in_a_title(client: TestClient) -> None:
    span = row(get(client, "/"), LONG_NAME).find("span", cls="trunc")
    assert span.attrs["title"] == LONG_NAME and span.text() == LONG_NAME


def test_empty_states(client: TestClient) -> None:
    page = get(client, "/?q=no-such-operator")
    assert "No operator matches these filters" in page.find("div", cls="empty").text()


def test_bad_input_gives_an_html_error_page(client: TestClient) -> None:
    for url, words in (("/?page=abc", "page"), ("/?verdict=nonsense", "unknown verdict"),
                       ("/?since=forever", "unknown time window"), ("/?mode=gpu", "unknown mode"),
                       ("/?per_page=0", "per_page")):
        page = get(client, url, status=422)
        assert words in page.find("p", cls="detail").text(), url


def test_unknown_url_is_an_html_404_for_browsers_and_json_for_the_api(client: TestClient) -> None:
    response = client.get("/no/such/page", headers={"Accept": "text/html"})
    assert response.status_code == 404 and "There is no page at /no/such/page" in response.text
    api = client.get("/api/v1/no/such", headers={"Accept": "text/html"})
    assert api.status_code == 404 and api.headers["content-type"] == "application/json"


def test_the_page_query_count_does_not_grow_with_its_size(client: TestClient, app: Any) -> None:
    """Templates never query: the services load everything a page shows up front."""
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "api_tokens" not in statement:  # sign-in's token lookup, and its throttled last_used_at write
            statements.append(statement)

    event.listen(app.state.engine, "before_cursor_execute", count)
    try:
        client.get("/?per_page=1")
        small = len(statements)
        statements.clear()
        client.get("/?per_page=6")
        assert len(statements) == small
    finally:
        event.remove(app.state.engine, "before_cursor_execute", count)
