"""Cases written for another pypto: the job page names what the worker's pypto lacks, the overview groups them."""
from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from server.migrate import upgrade
from server.services import tokens
from tests.web import seed as seeding
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.signin import sign_in

SKEW = {"installed": "0.2.0", "kind": "missing_api", "names": ["pypto.PrecisionType"],
        "evidence": "AttributeError: module 'pypto' has no attribute 'PrecisionType'", "found_by": "error"}


def test_version_skew_is_shown_and_grouped(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    report = seeding.sim_report("scale_add")
    for case in report["cases"]:
        case.update(verdict="version_skew", structural="error", version_skew=SKEW,
                    verdict_reason="written for another pypto: the installed pypto 0.2.0 has no `pypto.PrecisionType`")
    with app.state.sessionmaker() as session:
        job = seeding.submit_and_store(session, app.state.blobs, settings, "scale_add", {"sim": report})[0]
        _, secret = tokens.create(session, "reader", ["read"])
        session.commit()
        job_id = job.id
    with TestClient(app) as client:
        sign_in(client, secret)
        job_page = client.get(f"/jobs/{job_id}")
        overview = client.get("/")
        only_skew = client.get("/?verdict=version_skew")
    app.state.engine.dispose()
    assert job_page.status_code == 200, job_page.text
    notes = [p.text() for p in parse(job_page.text).find_all("p", cls="skew-note")]
    assert notes and all("pypto 0.2.0" in n and "pypto.PrecisionType" in n for n in notes)
    assert overview.status_code == 200 and only_skew.status_code == 200
    # written for another pypto: cannot be judged here, not a kernel defect (runtime/vocabulary.py)
    chip = parse(overview.text).find("a", data_outcome="skipped")
    assert chip.find("span", cls="n").text() == "1" and "cannot judge here" in chip.text()
    row = parse(overview.text).find("tbody", cls="op")
    assert "written for another pypto" in row.find("td", cls="combined").text()
    rows = parse(only_skew.text).find_all("tbody", cls="op")
    assert [r.attrs.get("data-verdict") for r in rows] == ["version_skew"]


def test_the_submit_form_asks_for_a_pypto_and_explains_a_refusal(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    with app.state.sessionmaker() as session:
        _, secret = tokens.create(session, "submitter", ["submit"])
        session.commit()
    with TestClient(app, follow_redirects=False) as client:
        sign_in(client, secret)
        form = parse(client.get("/submit").text)
        refused = client.post("/submit", files={"file": ("k.zip", seeding.bundle("scale_add"), "application/zip")},
                              data={"modes": "sim", "pypto": "0.3.0.dev0"})
    app.state.engine.dispose()
    assert form.find("input", id="s-pypto").attrs.get("name") == "pypto"
    assert refused.status_code == 409 and refused.headers["content-type"].startswith("text/html")
    assert "no online worker has pypto 0.3.0.dev0" in parse(refused.text).find("p", cls="detail").text()
