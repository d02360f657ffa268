"""The suite pages as HTML: the list, one run with its changes and results, the compare view, CSV."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.migrate import upgrade
from server.services import tokens
from tests.web import suite_seed
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.signin import sign_in


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, Any]]]:
    settings = make_settings(Path(tmp_path_factory.mktemp("suite-web")))
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        info = suite_seed.seed(session, app.state.blobs, settings)
        info["token"] = tokens.create(session, "reader", ["read"])[1]
        session.commit()
    with TestClient(app, follow_redirects=False) as client:
        sign_in(client, info["token"])
        yield client, info
    app.state.engine.dispose()


def page(client: TestClient, url: str) -> Any:
    r = client.get(url)
    assert r.status_code == 200, r.text[:500]
    return parse(r.text)


def rows(table: Any) -> list[str]:
    return [tr.text() for tr in table.find("tbody").find_all("tr")]


def test_the_list_shows_runs_by_commit_and_date(site):
    client, info = site
    main = page(client, "/suites").find("main")
    suites = rows(main.find("table", cls="suites"))
    assert len(suites) == 1 and f"#{info['second']}" in suites[0] and "bbb2222" in suites[0]
    runs = rows(main.find("table", cls="runs"))
    assert [r.split()[1] for r in runs] == [f"#{info['second']}", f"#{info['first']}"]
    assert "1 regressed" in runs[0] and "1 fixed" in runs[0] and "first on its branch" in runs[1]
    only_first = rows(page(client, "/suites?commit=aaa1").find("table", cls="runs"))
    assert len(only_first) == 1 and f"#{info['first']}" in only_first[0]
    assert "No run matches" in page(client, "/suites?branch=nope").find("main").text()
    assert client.get("/suites?since=forever").status_code == 422


def test_the_run_page_shows_what_changed_and_every_result(site):
    client, info = site
    main = page(client, f"/suite-runs/{info['second']}").find("main")
    assert "bbb2222" in main.find("dl", cls="facts").text()
    regressions = rows(main.find("table", id="regressions"))
    assert len(regressions) == 1 and "alpha" in regressions[0] and "crash" in regressions[0]
    assert "beta" in rows(main.find("table", id="fixes"))[0]
    assert {r.split()[0] for r in rows(main.find("table", id="new"))} == {"fresh", "alpha", "gamma"}  # NPU uploads too
    assert {r.split()[0] for r in rows(main.find("table", id="vanished"))} == {"gone"}
    [slower] = rows(main.find("table", cls="perf"))  # beta's estimate 30 % up (server/services/perf.py)
    assert "beta" in slower and "scale_add_32x64" in slower and "(+30%)" in slower
    results = rows(main.find("table", cls="results"))
    assert len(results) == 10  # 3 operators x 2 SIM cases + 2 operators x 2 NPU uploads
    npu = [r for r in results if " NPU " in f" {r} "]
    assert all("upload by npu-lab" in r for r in npu)
    assert any("npu:3" in r for r in npu) and any("unverified" in r for r in npu)
    failing = rows(page(client, f"/suite-runs/{info['second']}?show=failing").find("table", cls="results"))
    assert len(failing) == 1 and "crash" in failing[0]


def test_the_compare_view_and_its_form(site):
    client, info = site
    main = page(client, f"/suite-runs/{info['second']}/compare/{info['first']}").find("main")
    assert f"#{info['first']}" in main.find("h1").text()
    assert "alpha" in rows(main.find("table", id="regressions"))[0]
    back = page(client, f"/suite-runs/{info['first']}/compare/{info['second']}").find("main")
    assert "beta" in rows(back.find("table", id="regressions"))[0]
    r = client.get(f"/suite-runs?run={info['second']}&other={info['first']}")
    assert r.status_code == 303 and r.headers["location"] == f"/suite-runs/{info['second']}/compare/{info['first']}"
    assert client.get("/suite-runs/999").status_code == 404


def test_csv_exports(site):
    client, info = site
    r = client.get(f"/api/v1/suite-runs/{info['second']}/results.csv?show=failing")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    (row,) = list(csv.DictReader(io.StringIO(r.text)))
    assert (row["operator"], row["verdict"], row["mode"]) == ("alpha", "crash", "sim")
    ops = list(csv.DictReader(io.StringIO(client.get("/api/v1/operators.csv").text)))
    assert {o["operator"] for o in ops} == {"alpha", "beta", "gone", "fresh"}  # gamma's upload is unverified
    cases = list(csv.DictReader(io.StringIO(client.get("/api/v1/operators/alpha/cases.csv").text)))
    assert {c["npu_provenance"] for c in cases} == {"upload by npu-lab · npu:3"}


def test_operator_page_history_by_commit(site):
    client, _ = site
    main = page(client, "/operators/alpha").find("main")
    commits = rows(main.find("table", cls="commits"))
    assert commits[0].startswith("bbb2222") or "no commit" in commits[0]
    assert any("aaa1111" in c for c in commits) and any("bbb2222" in c for c in commits)
    assert "upload by npu-lab · npu:3" in main.find("table", cls="cases").text()


def test_csv_cells_that_spreadsheets_would_run_are_defused():
    from server.services.csv_export import write

    text = write(("name", "value"), [("=HYPERLINK(\"http://x\")", -1.5), ("+op", None), ("@sum", "ok")])
    assert list(csv.reader(io.StringIO(text)))[1:] == [["'=HYPERLINK(\"http://x\")", "-1.5"], ["'+op", ""],
                                                       ["'@sum", "ok"]]
