"""The job page says what the harness checked itself: corroborated launches, contradictions, refusals."""
from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from server.migrate import upgrade
from server.services import tokens
from tests.web import seed as seeding
from tests.web.conftest import make_app, make_settings
from tests.web.html import parse
from tests.signin import sign_in

CONTRADICTION = "the job changed the harness's code in its process: runtime.evidence.metrics.compare <script>"


def test_harness_checks_panel(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    app = make_app(settings)
    report = seeding.sim_report("golden_fallback")
    case = report["cases"][0]
    case.update(verdict="suspect_fake_pass",
                verdict_reason=f"the job's own report contradicts what the harness checked outside it: {CONTRADICTION}",
                evidence={"launches_reported": 2, "launches_corroborated": 1, "rechecked": True,
                          "contradictions": [CONTRADICTION],
                          "uncorroborated": ["launch 1 (op_kernel): names no folder in the job's output dir"],
                          "refused_files": ["pypto-log-0_1.log: a symbolic link"], "notes": []})
    with app.state.sessionmaker() as session:
        job = seeding.submit_and_store(session, app.state.blobs, settings, "golden_fallback", {"sim": report})[0]
        _, secret = tokens.create(session, "reader", ["read"])
        session.commit()
        job_id = job.id
    with TestClient(app) as client:
        sign_in(client, secret)
        response = client.get(f"/jobs/{job_id}")
    app.state.engine.dispose()
    assert CONTRADICTION not in response.text and "compare &lt;script&gt;" in response.text  # escaped
    assert response.status_code == 200, response.text
    page = parse(response.text)
    panel = page.find("details", cls="harness-checks")
    summary = panel.find("summary").text()
    assert "1 of 2 launch(es) corroborated" in summary and "result recompared" in summary
    assert "1 file(s) refused" in summary
    items = [li.text() for li in panel.find_all("li")]
    assert items[0] == f"contradiction: {CONTRADICTION}"
    assert items[1].startswith("not corroborated: launch 1") and items[2].startswith("refused: pypto-log-0_1.log")
