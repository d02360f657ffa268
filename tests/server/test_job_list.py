"""The jobs list reads every waiting job's queue position in one query (issue 36): the same positions as
one job's own page, and one query however many jobs the page shows."""
from __future__ import annotations

import sqlalchemy as sa


def test_the_list_shows_the_positions_a_job_shows(client, hdr, seed, sim_report, app):
    ids = [seed.submit()[0] for _ in range(4)]
    seed.run(ids[1], sim_report)  # finished: no position; the others move up
    statements: list[str] = []
    sa.event.listen(app.state.engine, "before_cursor_execute",
                    lambda _c, _cur, statement, *_: statements.append(statement))
    listed = client.get("/api/v1/jobs", headers=hdr["read"]).json()["items"]
    counts = [s for s in statements if "count(" in s.lower() or "rank()" in s.lower()]
    positions = {j["id"]: j["queue_position"] for j in listed}
    assert positions == {ids[3]: 3, ids[2]: 2, ids[1]: None, ids[0]: 1}
    for job_id, position in positions.items():
        assert client.get(f"/api/v1/jobs/{job_id}", headers=hdr["read"]).json()["queue_position"] == position
    assert len(counts) == 1, counts  # one query for the page's positions, not one per job
