"""Fair dispatch end to end (issue 36, docs/platform.md §4): a real API, Redis, PostgreSQL and one worker slot.
A second token's job starts after at most the first token's jobs running or sent when it came, not after its
whole backlog (the broker alone delivers first come first served)."""
from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from client.submit import bundle
from server.config import Settings
from server.db import make_engine
from server.services import tokens
from tests.conftest import EXAMPLES
from tests.e2e.conftest import running

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def submit_token(env: dict[str, str], name: str) -> str:
    engine = make_engine(Settings(database_url=env["DATABASE_URL"]).resolved_database_url)
    try:
        from sqlalchemy.orm import Session

        with Session(engine) as session, session.begin():
            return tokens.create(session, name, ["submit"])[1]
    finally:
        engine.dispose()


def test_a_second_tokens_job_goes_before_the_first_tokens_backlog(pg_redis_env, tmp_path: Path) -> None:
    with running("fair", dict(pg_redis_env), tmp_path, worker="e2e-fair") as stack:
        backlog = [stack.submit("scale_add")[0]["id"] for _ in range(4)]  # the admin's token: tenant A
        stack.wait_job(backlog[0], ("running", "succeeded", "failed", "error"))
        filename, data = bundle(EXAMPLES / "scale_add")
        other = {"Authorization": f"Bearer {submit_token(stack.env, 'team-b')}"}
        r = httpx.post(stack.url + "/api/v1/submissions", headers=other, files={"file": (filename, data)}, timeout=60)
        assert r.status_code == 202, r.text
        theirs = r.json()["jobs"][0]["id"]
        started = {}
        for job_id in [*backlog, theirs]:
            done = stack.wait_job(job_id)
            assert done["status"] == "succeeded", done
            started[job_id] = done["timings"]["started_at"]
        order = sorted(started, key=lambda j: started[j])
        # Behind at most the first job (running) and the second (if the first finished before it came).
        assert order.index(theirs) <= 2, (order, theirs)
