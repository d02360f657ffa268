"""A 202 means durably queued (issue 36, docs/platform.md §3): a job whose message the broker did not take,
because it was down or restarted empty, reaches it within seconds of its coming back, through the outbox
and the relay (server/relay.py) of the API's own process, not at the sweeper's next re-send minutes later."""
from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from server.models import Job
from tests.e2e.conftest import free_port
from tests.server.conftest import make_tokens

pytestmark = pytest.mark.redis
URL = "/api/v1/submissions"
DEADLINE_S = 30.0  # the sweeper's re-send comes after 2 x STALE_JOB_S; the relay's within seconds


class PrivateRedis:
    """A redis-server of this test's own (never the shared one): stopped and started again empty at will."""

    def __init__(self, where: Path):
        self.port, self.where, self.proc = free_port(), where, None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.where)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def messages(self, queue: str = "sim") -> int:
        client = redis.Redis.from_url(self.url)
        try:
            return int(client.llen(queue))
        finally:
            client.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[PrivateRedis]:
    b = PrivateRedis(tmp_path)
    yield b
    b.stop()


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"gave up after {DEADLINE_S:.0f} s waiting for {what}")


@contextmanager
def start(make_app, settings, broker: PrivateRedis) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """The app with its relay and sweeper on the private broker, and one online worker of 4 slots (jobs are
    sent by free worker slots: docs/platform.md §4); the submit token's headers."""
    app = make_app(settings.model_copy(update={"broker_url": broker.url, "fair_dispatch": True,
                                               "job_heartbeat_s": 60.0}), start_sweeper=True)
    with TestClient(app) as client:
        secrets = make_tokens(app)
        beat = {"name": "w1", "host": "h", "queues": ["sim"], "capabilities": {"slots": 4}}
        r = client.post("/api/v1/workers/heartbeat", json=beat,
                        headers={"Authorization": f"Bearer {secrets['worker']}"})
        assert r.status_code == 200, r.text
        yield client, {"Authorization": f"Bearer {secrets['submit']}"}


def owed(app, job_id: int) -> bool:
    with app.state.sessionmaker() as session:
        job = session.get(Job, job_id)
        return job.dispatched_attempt != job.attempts


def test_a_job_accepted_while_the_broker_is_down_reaches_it_when_it_is_back(make_app, settings, broker,
                                                                           scale_add_zip):
    with start(make_app, settings, broker) as (client, headers):
        app = client.app
        r = client.post(URL, headers=headers, files={"file": ("scale_add.zip", scale_add_zip)})
        assert r.status_code == 202, r.text  # accepted: the row and its debt to the broker are committed
        job_id = r.json()["jobs"][0]["id"]
        assert owed(app, job_id)
        broker.start()
        wait_for(lambda: broker.messages() == 1, "the job's message in the broker")
        wait_for(lambda: not owed(app, job_id), "the job marked sent")
        time.sleep(3 * 1.0)  # three more relay passes: sent once, not once a pass
        assert broker.messages() == 1


def test_after_a_broker_restart_every_waiting_job_is_back_on_its_queue(make_app, settings, broker, scale_add_zip,
                                                                       files_of, make_zip):
    broker.start()
    with start(make_app, settings, broker) as (client, headers):
        for op in ("scale_add", "relu"):
            bundle = scale_add_zip if op == "scale_add" else make_zip(files_of("relu"), top="relu")
            assert client.post(URL, headers=headers, files={"file": (f"{op}.zip", bundle)}).status_code == 202
        wait_for(lambda: broker.messages() == 2, "both messages in the broker")
        broker.stop()  # restarted without its data: the messages are gone
        broker.start()
        assert broker.messages() == 0
        wait_for(lambda: broker.messages() == 2, "both messages back on the queue")
