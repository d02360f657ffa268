"""NPU jobs without an NPU worker (awaiting_npu, queue position, expiry), and card releases."""
from __future__ import annotations

from datetime import timedelta

from server.models import Job, Worker
from server.models.base import utcnow
from server.sweeper import Sweeper

BEAT = {"host": "npu-host", "queues": ["npu"]}
CARDS = [{"device": 3, "state": "quarantined"}, {"device": 4, "state": "free"}]


def beat(client, hdr, name: str = "npu@host", modes: tuple[str, ...] = ("sim", "npu"), cards=CARDS):  # type: ignore[no-untyped-def]
    r = client.post("/api/v1/workers/heartbeat", headers=hdr["worker"],
                    json={"name": name, **BEAT, "capabilities": {"modes": list(modes), "cards": cards}})
    assert r.status_code == 200, r.text
    return r.json()


def job(app, job_id: int) -> Job:  # type: ignore[no-untyped-def]
    with app.state.sessionmaker() as session:
        return session.get(Job, job_id)


def sweep(app):  # type: ignore[no-untyped-def]
    return Sweeper(app.state.sessionmaker, app.state.producer, app.state.settings).sweep_once()


def test_npu_jobs_await_an_npu_worker_in_queue_order(client, app, seed, hdr) -> None:  # type: ignore[no-untyped-def]
    sim, first = seed.submit(modes=("sim", "npu"))
    [second] = seed.submit(operator="other", modes=("npu",))
    read = client.get(f"/api/v1/jobs/{first}", headers=hdr["read"]).json()
    assert (read["status"], read["queue_position"]) == ("awaiting_npu", 1)
    assert client.get(f"/api/v1/jobs/{second}", headers=hdr["read"]).json()["queue_position"] == 2
    assert job(app, sim).status == "queued"  # SIM jobs never wait for an NPU
    page = client.get(f"/jobs/{first}", headers=hdr["read"]).text
    assert "Awaiting an NPU worker" in page and "position 1 in the npu queue" in page


def test_a_sim_only_worker_does_not_end_the_wait(client, app, seed, hdr) -> None:  # type: ignore[no-untyped-def]
    [npu] = seed.submit(modes=("npu",))
    beat(client, hdr, "sim@host", modes=("sim",), cards=[])
    assert sweep(app).npu.resumed == [] and job(app, npu).status == "awaiting_npu"


def test_an_npu_worker_coming_and_going_moves_the_job(client, app, seed, hdr) -> None:  # type: ignore[no-untyped-def]
    [npu] = seed.submit(modes=("npu",))
    beat(client, hdr)
    assert sweep(app).npu.resumed == [npu] and job(app, npu).status == "queued"
    with app.state.sessionmaker.begin() as session:  # the worker goes silent
        session.get(Worker, "npu@host").last_heartbeat = utcnow() - timedelta(hours=1)
    assert sweep(app).npu.awaiting == [npu]
    assert job(app, npu).status == "awaiting_npu" and job(app, npu).awaiting_since is not None


def test_a_worker_whose_cards_are_all_quarantined_is_no_npu_worker(client, app, seed, hdr) -> None:  # type: ignore[no-untyped-def]
    beat(client, hdr, modes=("sim",))  # capabilities drop "npu" when every card is quarantined
    [npu] = seed.submit(modes=("npu",))
    assert job(app, npu).status == "awaiting_npu"


def test_a_long_wait_expires_with_a_clear_status(client, app, seed, hdr) -> None:  # type: ignore[no-untyped-def]
    [npu] = seed.submit(modes=("npu",))
    assert sweep(app).npu.expired == []
    with app.state.sessionmaker.begin() as session:
        session.get(Job, npu).awaiting_since = utcnow() - timedelta(seconds=app.state.settings.npu_wait_s + 60)
    assert sweep(app).npu.expired == [npu]
    read = client.get(f"/api/v1/jobs/{npu}", headers=hdr["read"]).json()
    assert read["status"] == "expired" and read["queue_position"] is None
    assert read["error"].startswith("no NPU worker came online within 24 h; nothing ran.")
    r = client.post(f"/api/v1/jobs/{npu}/retry", headers=hdr["submit"])  # a finished job: it can be retried
    assert r.status_code == 200 and r.json()["status"] == "queued"
    assert sweep(app).npu.awaiting == [npu]


def test_an_awaiting_job_can_be_cancelled_and_claimed(client, app, seed, hdr) -> None:  # type: ignore[no-untyped-def]
    first, second = seed.submit(modes=("npu",))[0], seed.submit(operator="b", modes=("npu",))[0]
    assert client.post(f"/api/v1/jobs/{first}/cancel", headers=hdr["submit"]).json()["status"] == "cancelled"
    r = client.post(f"/api/v1/internal/jobs/{second}/claim", headers=hdr["worker"], json={"worker": "w", "attempt": 1})
    assert r.status_code == 200 and job(app, second).status == "running" and job(app, second).awaiting_since is None


def test_an_admin_releases_a_quarantined_card_and_the_worker_hears_it(client, hdr) -> None:  # type: ignore[no-untyped-def]
    beat(client, hdr)
    url = "/api/v1/workers/npu@host/cards/{}/release"
    assert client.post(url.format(3), headers=hdr["submit"]).status_code == 403
    r = client.post(url.format(3), headers=hdr["admin"])
    assert r.status_code == 200 and r.json() == {"worker": "npu@host", "card": 3, "release": 1}
    assert beat(client, hdr)["card_releases"] == {"3": 1}
    r = client.post(url.format(4), headers=hdr["admin"])
    assert r.status_code == 409 and r.json()["detail"] == "card 4 of worker 'npu@host' is not quarantined (it is free)"
    assert client.post(url.format(9), headers=hdr["admin"]).status_code == 404
    assert client.post("/api/v1/workers/nobody/cards/3/release", headers=hdr["admin"]).status_code == 404


def test_the_workers_page_shows_cards_and_release_buttons_to_admins(client, hdr) -> None:  # type: ignore[no-untyped-def]
    cards = [{"device": 3, "soc": "910B3", "npu_smi_health": "OK", "state": "quarantined", "failures_in_row": 3,
              "failures": 3, "jobs_ok": 0, "quarantined_at": "2026-12-03T10:00:00+00:00",
              "reason": "3 device-level failures in a row; last: npu-device-error: error code is 507033",
              "last_failure": {"job_id": 12, "summary": "npu-device-error: error code is 507033"}},
             {"device": 4, "soc": "910B3", "state": "busy", "job_id": 13, "failures_in_row": 0, "failures": 0,
              "jobs_ok": 5}]
    beat(client, hdr, cards=cards)
    admin = client.get("/workers", headers=hdr["admin"]).text
    assert "NPU cards" in admin and "quarantined" in admin and "job #12" in admin and "job #13" in admin
    assert 'action="/workers/npu%40host/cards/3/release"' in admin
    assert "/cards/4/release" not in admin  # only quarantined cards have the button
    assert "/release" not in client.get("/workers", headers=hdr["read"]).text
    r = client.post("/workers/npu%40host/cards/3/release", headers=hdr["admin"], follow_redirects=False)
    assert r.status_code == 303
    assert beat(client, hdr, cards=cards)["card_releases"] == {"3": 1}
