"""Fair dispatch (issue 36, docs/platform.md §4): jobs wait in the database until a worker slot is free, and a
free slot goes to interactive jobs first, then round-robin over tokens, so one token's backlog delays another's
job by at most the jobs already running. Real app, real database, the real (embedded) broker's messages."""
from __future__ import annotations

from fastapi.testclient import TestClient

from server.relay import Relay
from server.services import tokens
from tests.server.conftest import Seeder, make_tokens

URL = "/api/v1/submissions"


class Service:
    def __init__(self, app, client: TestClient, messages):
        self.app, self.client, self.messages = app, client, messages
        secrets = make_tokens(app)
        with app.state.sessionmaker.begin() as session:
            secrets["other"] = tokens.create(session, "other-team", ["submit"])[1]
        self.secrets = secrets
        self.relay = Relay(app.state.sessionmaker, app.state.producer, app.state.settings)
        self.seed = Seeder(app)
        self.n = 0

    def worker_online(self, slots: int) -> None:
        beat = {"name": "w1", "host": "h", "queues": ["sim"], "capabilities": {"slots": slots}}
        r = self.client.post("/api/v1/workers/heartbeat", json=beat, headers=self.auth("worker"))
        assert r.status_code == 200, r.text

    def auth(self, kind: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets[kind]}"}

    def submit(self, files, make_zip, kind: str = "submit", interactive: bool = False) -> int:
        self.n += 1  # a bundle of its own each time: never an identical submission
        bundle = make_zip({**files, "note.txt": f"submission {self.n}\n"}, top="scale_add")
        data = {"interactive": "true"} if interactive else {}
        r = self.client.post(URL, headers=self.auth(kind), files={"file": ("scale_add.zip", bundle)}, data=data)
        assert r.status_code == 202, r.text
        return int(r.json()["jobs"][0]["id"])

    def sent(self) -> list[int]:
        self.relay.relay_once()
        return [m["args"][0] for m in self.messages()]

    def finish(self, job_id: int, report) -> None:
        self.seed.run(job_id, report)  # claimed and its result stored, as a worker's calls do




def test_a_second_token_waits_only_for_the_running_job(make_app, settings, messages, files_of, make_zip, sim_report):
    app = make_app(settings.model_copy(update={"fair_dispatch": True}))
    with TestClient(app) as client:
        s = Service(app, client, messages)
        files = files_of("scale_add")
        backlog = [s.submit(files, make_zip) for _ in range(4)]
        assert s.sent() == []  # no worker online: nothing goes to the broker
        s.worker_online(slots=1)
        assert s.sent() == backlog[:1]
        theirs = s.submit(files, make_zip, kind="other")
        assert s.sent() == backlog[:1]  # the one slot is taken
        s.finish(backlog[0], sim_report)
        assert s.sent() == [backlog[0], theirs]  # next, not behind the three others of the first token
        s.finish(theirs, sim_report)
        assert s.sent() == [backlog[0], theirs, backlog[1]]


def test_an_interactive_job_goes_before_batch_jobs(make_app, settings, messages, files_of, make_zip, sim_report):
    app = make_app(settings.model_copy(update={"fair_dispatch": True}))
    with TestClient(app) as client:
        s = Service(app, client, messages)
        files = files_of("scale_add")
        s.worker_online(slots=1)
        nightly = [s.submit(files, make_zip, kind="other") for _ in range(3)]
        assert s.sent() == nightly[:1]
        waited_for = s.submit(files, make_zip, kind="other", interactive=True)  # even from the same token
        s.finish(nightly[0], sim_report)
        assert s.sent() == [nightly[0], waited_for]
