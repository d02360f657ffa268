"""The sweeper: lost workers' jobs come back, lost messages are re-sent, the broker table is cleaned."""
from __future__ import annotations

import sqlite3
import time
from datetime import timedelta

from fastapi.testclient import TestClient

from server.models import Job
from server.models.base import utcnow
from server.sweeper import Sweeper


def _sweeper(app) -> Sweeper:
    return Sweeper(app.state.sessionmaker, app.state.producer, app.state.settings, interval_s=0.05)


def _age(app, job_id: int, **ages_s: float) -> None:
    with app.state.sessionmaker.begin() as session:
        job = session.get(Job, job_id)
        for column, seconds in ages_s.items():
            setattr(job, column, utcnow() - timedelta(seconds=seconds))


def _job(app, job_id: int) -> Job:
    with app.state.sessionmaker() as session:
        return session.get(Job, job_id)


def _claim(app, job_id: int, attempt: int = 1) -> None:
    from server.services import jobs

    with app.state.sessionmaker.begin() as session:
        assert jobs.claim(session, job_id, "w1", attempt)


def test_a_running_job_without_heartbeat_is_requeued_and_resent(app, seed, messages):
    [job_id] = seed.submit()
    _claim(app, job_id)
    _age(app, job_id, heartbeat_at=app.state.settings.stale_job_s + 5)
    report = _sweeper(app).sweep_once()
    assert report.requeued == [job_id] and report.resent == []
    job = _job(app, job_id)
    assert (job.status, job.attempts, job.worker) == ("queued", 2, None)
    assert "worker lost during attempt 1" in job.error
    assert [m["args"] for m in messages()] == [[job_id, 2]]


def test_a_job_lost_too_often_fails(app, seed):
    [job_id] = seed.submit()
    sweeper = _sweeper(app)
    for attempt in (1, 2, 3):
        _claim(app, job_id, attempt)
        _age(app, job_id, heartbeat_at=1000)
        report = sweeper.sweep_once()
    assert report.failed == [job_id]
    job = _job(app, job_id)
    assert (job.status, job.attempts) == ("error", 3) and "giving up" in job.error


def test_a_fresh_running_job_is_left_alone(app, seed):
    [job_id] = seed.submit()
    _claim(app, job_id)
    assert _sweeper(app).sweep_once().requeued == []
    assert _job(app, job_id).status == "running"


def test_an_old_queued_job_is_resent_with_backoff(app, seed, messages):
    [old, fresh] = seed.submit(modes=("sim", "npu"))
    _age(app, old, queued_at=2 * app.state.settings.stale_job_s + 5)
    sweeper = _sweeper(app)
    assert sweeper.sweep_once().resent == [old]
    assert sweeper.sweep_once().resent == []  # not again until the backoff has passed
    assert [m["args"] for m in messages()] == [[old, 1]]
    assert (_job(app, old).status, _job(app, old).attempts) == ("queued", 1)  # the claim guards duplicates


def test_consumed_messages_are_purged(app, seed, messages, settings):
    app.state.producer.enqueue(1, 1, "sim", 60.0)
    app.state.producer.enqueue(2, 1, "sim", 60.0)
    path = settings.resolved_broker_url.removeprefix("sqla+sqlite:///")
    with sqlite3.connect(path) as conn:  # as a worker would: consume one, long ago
        conn.execute("UPDATE kombu_message SET visible = 0, timestamp = '2000-01-01 00:00:00.000000' WHERE id = 1")
    assert _sweeper(app).sweep_once().purged == 1
    assert [m["args"] for m in messages()] == [[2, 1]]


def test_the_app_starts_and_stops_the_sweeper(make_app, seed, messages):
    app = make_app(start_sweeper=True)  # the same database as `seed`'s app
    [job_id] = seed.submit()
    _claim(app, job_id)
    _age(app, job_id, heartbeat_at=10_000)
    with TestClient(app):
        deadline = time.monotonic() + 10
        while _job(app, job_id).status != "queued" and time.monotonic() < deadline:
            time.sleep(0.05)  # the first sweep runs at start-up
    assert _job(app, job_id).attempts == 2



def test_two_sweepers_racing_requeue_a_lost_job_once(app, seed, messages, monkeypatch):
    """Two API processes' sweepers both see the job as stale; only one re-queues and sends it."""
    import threading

    from server.services import jobs

    [job_id] = seed.submit()
    _claim(app, job_id)
    _age(app, job_id, heartbeat_at=app.state.settings.stale_job_s + 5)
    both_read = threading.Barrier(2, timeout=30)
    read_stale = jobs.stale_jobs

    def stale_then_wait(session, stale_s):  # both have read the stale job before either writes
        found = read_stale(session, stale_s)
        both_read.wait()
        return found

    monkeypatch.setattr(jobs, "stale_jobs", stale_then_wait)
    reports, errors = [], []

    def sweep() -> None:
        try:
            reports.append(_sweeper(app).sweep_once())
        except Exception as exc:  # noqa: BLE001 - SQLite may refuse the loser's write instead
            errors.append(exc)

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r.requeued for r in reports) in ([[], [job_id]], [[job_id]])
    assert all("locked" in str(e) for e in errors) and len(reports) + len(errors) == 2
    job = _job(app, job_id)
    assert (job.status, job.attempts) == ("queued", 2)
    assert [m["args"] for m in messages()] == [[job_id, 2]]
