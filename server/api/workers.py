"""Workers: their heartbeat (scope worker), the list (scope read), releasing NPU cards (scope admin)."""
from __future__ import annotations

from fastapi import APIRouter

from server.api.deps import SessionDep, SettingsDep
from server.auth import AdminCaller, ReadCaller, WorkerCaller
from server.schemas.common import ErrorRead
from server.schemas.worker import CardReleaseRead, WorkerHeartbeat, WorkerList, WorkerRead, WorkerRemoved
from server.services import audit, queries, workers

router = APIRouter(prefix="/workers", tags=["workers"])


@router.get("", response_model=WorkerList, summary="Workers that reported, most recent first")
def list_workers(caller: ReadCaller, session: SessionDep, settings: SettingsDep) -> WorkerList:
    """Every worker with its queues and capabilities; online = heartbeat within 3 periods."""
    items = [WorkerRead.model_validate(w).model_copy(update={"online": workers.is_online(w, settings.job_heartbeat_s)})
             for w in queries.list_workers(session)]
    return WorkerList(items=items)


@router.post("/heartbeat", response_model=WorkerRead, summary="A worker says it is alive",
             responses={403: {"model": ErrorRead}})
def worker_heartbeat(body: WorkerHeartbeat, caller: WorkerCaller, session: SessionDep,
                     settings: SettingsDep) -> WorkerRead:
    """Upsert the worker's row: host, queues, capabilities and current job; 403 when the name is an
    online worker's that registered with another token."""
    worker = workers.heartbeat(session, body.name, body.host, body.queues, body.capabilities,
                               body.current_job_id, body.jobs_done, caller.token_id, settings.job_heartbeat_s)
    return WorkerRead.model_validate(worker).model_copy(update={"online": True})


@router.post("/{name}/cards/{card}/release", response_model=CardReleaseRead,
             summary="Release a quarantined NPU card", responses={404: {"model": ErrorRead}, 409: {"model": ErrorRead}})
def release_card(name: str, card: int, caller: AdminCaller, session: SessionDep) -> CardReleaseRead:
    """The worker takes the card back into its pool at its next heartbeat; 409 when it is not quarantined."""
    release = workers.release_card(session, name, card)
    audit.record(session, caller.name, audit.CARD_RELEASE, f"worker {name}", caller.token_id, card=card)
    return CardReleaseRead(worker=name, card=card, release=release)


@router.delete("/{name}", response_model=WorkerRemoved, summary="Remove a stale worker",
               responses={404: {"model": ErrorRead}, 409: {"model": ErrorRead}})
def remove_worker(name: str, caller: AdminCaller, session: SessionDep, settings: SettingsDep) -> WorkerRemoved:
    """Forget a worker that stopped sending heartbeats; 409 while it is online."""
    workers.remove(session, name, settings.job_heartbeat_s)
    audit.record(session, caller.name, audit.WORKER_REMOVE, f"worker {name}", caller.token_id)
    return WorkerRemoved(removed=name)
