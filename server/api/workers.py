"""Workers: their heartbeat (scope worker) and the list (scope read)."""
from __future__ import annotations

from fastapi import APIRouter

from server.api.deps import SessionDep, SettingsDep
from server.auth import ReadCaller, WorkerCaller
from server.schemas.worker import WorkerHeartbeat, WorkerList, WorkerRead
from server.services import queries, workers

router = APIRouter(prefix="/workers", tags=["workers"])


@router.get("", response_model=WorkerList, summary="Workers that reported, most recent first")
def list_workers(caller: ReadCaller, session: SessionDep, settings: SettingsDep) -> WorkerList:
    """Every worker with its queues and capabilities; online = heartbeat within 3 periods."""
    items = [WorkerRead.model_validate(w).model_copy(update={"online": workers.is_online(w, settings.job_heartbeat_s)})
             for w in queries.list_workers(session)]
    return WorkerList(items=items)


@router.post("/heartbeat", response_model=WorkerRead, summary="A worker says it is alive")
def worker_heartbeat(body: WorkerHeartbeat, caller: WorkerCaller, session: SessionDep) -> WorkerRead:
    """Upsert the worker's row: host, queues, capabilities and current job."""
    worker = workers.heartbeat(session, body.name, body.host, body.queues, body.capabilities,
                               body.current_job_id, body.jobs_done)
    return WorkerRead.model_validate(worker).model_copy(update={"online": True})
