"""Uploads take turns at the gate while reads pass it (server/upload_gate.py, docs/platform.md §5): with one
place, a second upload waits until the first has its answer, and a read goes by both of them."""
from __future__ import annotations

import anyio
from starlette.types import Receive, Scope, Send

from server.upload_gate import UploadGate, is_upload


def test_which_requests_are_uploads() -> None:
    for method, path in (("POST", "/api/v1/submissions"), ("POST", "/api/v1/suite-runs/3/submissions"),
                         ("POST", "/submit"), ("POST", "/api/v1/ingest/junit"), ("POST", "/api/v1/ingest/report")):
        assert is_upload(method, path), (method, path)
    for method, path in (("GET", "/api/v1/submissions/3"), ("GET", "/api/v1/jobs"), ("GET", "/submit"),
                         ("POST", "/api/v1/internal/jobs/3/heartbeat"), ("POST", "/api/v1/jobs/3/cancel")):
        assert not is_upload(method, path), (method, path)


def test_uploads_take_turns_and_reads_go_by() -> None:
    anyio.run(_uploads_take_turns_and_reads_go_by)


async def _uploads_take_turns_and_reads_go_by() -> None:
    inside: list[str] = []
    release = anyio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        inside.append(scope["path"])
        if scope["method"] == "POST":
            await release.wait()  # an upload being checked
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def nothing() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    async def sent(message: dict[str, object]) -> None:
        pass

    def request(method: str, path: str) -> Scope:
        return {"type": "http", "method": method, "path": path, "headers": []}

    gate = UploadGate(app, slots=1)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(gate, request("POST", "/api/v1/submissions"), nothing, sent)
        tasks.start_soon(gate, request("POST", "/submit"), nothing, sent)
        await anyio.wait_all_tasks_blocked()
        assert inside == ["/api/v1/submissions"]  # the second upload waits at the gate
        with anyio.fail_after(60):
            await gate(request("GET", "/api/v1/jobs"), nothing, sent)  # a read passes while both are held
        assert inside == ["/api/v1/submissions", "/api/v1/jobs"]
        release.set()
    assert inside == ["/api/v1/submissions", "/api/v1/jobs", "/submit"]
