"""The jobs list reads every waiting job's queue position in one query (issue 36): the same positions as
one job's own page, and one query however many jobs the page shows; a page sends the same statements for 2
jobs as for 50, and keyset pages (`before`) walk the list once."""
from __future__ import annotations

import re

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


def _statements(app, client, url, headers) -> tuple[list[str], list[dict]]:
    sent: list[str] = []

    def capture(_conn, _cursor, statement, *_args) -> None:
        sent.append(re.sub(r"IN \((?:[^()]|\([^()]*\))*\)", "IN (...)", statement))  # one statement, however many ids

    sa.event.listen(app.state.engine, "before_cursor_execute", capture)
    try:
        response = client.get(url, headers=headers)
    finally:
        sa.event.remove(app.state.engine, "before_cursor_execute", capture)
    assert response.status_code == 200, response.text[:300]
    return sent, response.json()["items"]


def test_a_page_sends_the_same_sql_however_many_jobs_and_operators(client, hdr, seed, sim_report, app):
    """One operator's two jobs, then 60 more jobs of 30 operators (half waiting, half finished): a page of 2 and a
    page of 50 send the same statements, one by one, and the pages walk the whole list once (`before`)."""
    first = [seed.submit("op_first")[0] for _ in range(2)]
    client.get("/api/v1/jobs", headers=hdr["read"])  # a token's use is written at most once a minute
    small, listed = _statements(app, client, "/api/v1/jobs?limit=2", hdr["read"])
    assert [j["id"] for j in listed] == first[::-1] and {j["operator"] for j in listed} == {"op_first"}
    more = [seed.submit(f"op_{i % 30:02d}")[0] for i in range(60)]
    for job_id in more[::2]:
        seed.run(job_id, sim_report)
    large, listed = _statements(app, client, "/api/v1/jobs?limit=50", hdr["read"])
    assert len(listed) == 50 and len({j["operator"] for j in listed}) == 30
    assert large == small  # none per job, per operator or per queue position
    assert [j["queue_position"] for j in listed if j["id"] == more[-1]] == [32]  # 2 + 29 waiting ahead of it
    pages, before = [], ""
    for _ in range(5):  # 3 pages and an empty one; a list that ignored `before` would repeat its first page
        items = client.get(f"/api/v1/jobs?limit=25{before}", headers=hdr["read"]).json()["items"]
        if not items:
            break
        pages.append([j["id"] for j in items])
        before = f"&before={items[-1]['id']}"
    assert [i for page in pages for i in page] == sorted(first + more, reverse=True) and len(pages) == 3
