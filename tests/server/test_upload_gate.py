"""Uploads are received whole, then take turns, while reads pass (server/upload_gate.py, docs/platform.md §5):
with one place, a second upload waits until the first has its answer, a read goes by both, an upload still
being sent holds no place, and the app reads each body exactly as it was sent, small or spooled to disk."""
from __future__ import annotations

from typing import Any

import anyio
from starlette.types import Message, Receive, Scope, Send

from server.upload_gate import SPOOL_MEMORY_BYTES, UploadGate, is_upload


def test_which_requests_are_uploads() -> None:
    for method, path in (("POST", "/api/v1/submissions"), ("POST", "/api/v1/suite-runs/3/submissions"),
                         ("POST", "/submit"), ("POST", "/api/v1/ingest/junit"), ("POST", "/api/v1/ingest/report")):
        assert is_upload(method, path), (method, path)
    for method, path in (("GET", "/api/v1/submissions/3"), ("GET", "/api/v1/jobs"), ("GET", "/submit"),
                         ("POST", "/api/v1/internal/jobs/3/heartbeat"), ("POST", "/api/v1/jobs/3/cancel")):
        assert not is_upload(method, path), (method, path)


def request(method: str, path: str) -> Scope:
    return {"type": "http", "method": method, "path": path, "headers": []}


def body_of(*chunks: bytes, sending: anyio.Event | None = None) -> Receive:
    """A client sending `chunks`; with `sending`, it sends the last one only once that is set."""
    todo = list(chunks)

    async def receive() -> Message:
        if len(todo) == 1 and sending is not None:
            await sending.wait()
        if todo:
            return {"type": "http.request", "body": todo.pop(0), "more_body": bool(todo)}
        await anyio.sleep_forever()
        raise AssertionError  # unreachable

    return receive


async def sent(message: Message) -> None:
    pass


class App:
    """Records which paths got in, and the bodies it read; POSTs stay in until `release`."""

    def __init__(self) -> None:
        self.inside: list[str] = []
        self.bodies: list[bytes] = []
        self.release = anyio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.inside.append(scope["path"])
        if scope["method"] == "POST":
            body = b""
            while True:
                message: dict[str, Any] = dict(await receive())
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            self.bodies.append(body)
            await self.release.wait()  # an upload being checked
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def test_uploads_take_turns_and_reads_go_by() -> None:
    anyio.run(_uploads_take_turns_and_reads_go_by)


async def _uploads_take_turns_and_reads_go_by() -> None:
    app, still_sending = App(), anyio.Event()
    gate = UploadGate(app, slots=1)
    big = bytes(range(256)) * (3 * SPOOL_MEMORY_BYTES // 256 + 7)  # spooled to disk
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(gate, request("POST", "/slow/submissions"), body_of(b"a" * 10, b"b", sending=still_sending),
                         sent)
        await anyio.wait_all_tasks_blocked()
        assert app.inside == []  # still being sent: received by the gate, not yet in the app
        tasks.start_soon(gate, request("POST", "/api/v1/submissions"), body_of(big[:70_000], big[70_000:]), sent)
        await anyio.wait_all_tasks_blocked()
        assert app.inside == ["/api/v1/submissions"]  # received whole: it takes the place the slow one does not hold
        still_sending.set()
        await anyio.wait_all_tasks_blocked()
        assert app.inside == ["/api/v1/submissions"]  # the slow one, now received, waits for the place
        with anyio.fail_after(60):
            await gate(request("GET", "/api/v1/jobs"), body_of(b""), sent)  # a read passes while both are held
        assert app.inside == ["/api/v1/submissions", "/api/v1/jobs"]
        app.release.set()
    assert app.inside == ["/api/v1/submissions", "/api/v1/jobs", "/slow/submissions"]
    assert app.bodies == [big, b"a" * 10 + b"b"]


def test_a_client_gone_before_its_body_is_all_sent_never_reaches_the_app() -> None:
    async def main() -> None:
        app = App()
        messages = iter([{"type": "http.request", "body": b"part", "more_body": True}, {"type": "http.disconnect"}])

        async def receive() -> Message:
            return next(messages)

        await UploadGate(app, slots=1)(request("POST", "/api/v1/submissions"), receive, sent)
        assert app.inside == []

    anyio.run(main)
