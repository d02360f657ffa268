"""The job's view of the host (issue 25): its own IPC and /proc, nothing writable of the host's, and
nothing of the starting dir or of other jobs' dirs.

Each attack runs through the real runtime, from a warm parent started in a directory of its own
(holding a service log, as `crosscheck up` started there would); the same attack against the
warm parent as it was (tests/hostile/unfixed_host_view.py) must get through, so each test can fail.
The traps (a world-writable dir and file and a listening socket no fixed list names) are laid
before the warm parents start: the sandbox finds them by scanning the mount table and the tree.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runtime import verdicts
from runtime.warm import WarmParent
from tests.hostile.evidence_kit import package, run
from tests.hostile.unfixed_sandbox import UnfixedViewParent

pytestmark = pytest.mark.slow

MIB = 2**20
IPC_CREAT = 0o1000
IPC_RMID = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p

# Creates a SysV segment and a POSIX queue and leaves both; looks for the host's segment.
IPC_ATTACK = '''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
seg = libc.shmget(KEY, 4096, 0o1666)
addr = libc.shmat(seg, None, 0)
ctypes.memmove(addr, b"MARK", 4)
libc.shmdt(ctypes.c_void_p(addr))
rt = ctypes.CDLL("librt.so.1", use_errno=True)
queue = rt.mq_open(QUEUE.encode(), os.O_CREAT | os.O_RDWR, 0o666, None)
host = libc.shmget(HOST_KEY, 0, 0)
raise RuntimeError(f"IPC created={seg} queue={queue} host_segment={host}")
'''

PROC_PEEK = '''
import os
pids = [n for n in os.listdir("/proc") if n.isdigit()]
raise RuntimeError(f"PROC self={os.readlink('/proc/self')} pids={len(pids)}")
'''

# Leaves files in /run/lock and in the trap dir, tampers with the world-writable file, dials the socket.
WRITE_ATTACK = '''
import os, socket
got = []
for folder in ("/run/lock", DROP):
    try:
        with open(os.path.join(folder, "TAG-left"), "w") as f:
            f.write("x")
        got.append(folder)
    except OSError:
        pass
try:
    with open(WFILE, "a") as f:
        f.write("TAMPERED")
    got.append("file")
except OSError:
    pass
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(SOCK)
    got.append("socket " + s.recv(16).decode())
except OSError:
    pass
raise RuntimeError(f"WRITABLE {got}")
'''

# 300 MiB into /run/lock (16 MiB files, under the per-file limit) under a 128 MiB disk cap, then
# waits for the disk poll to see it.
LOCK_FILL = '''
import os, time
written = 0
try:
    for i in range(300 // 16 + 1):
        with open(f"/run/lock/TAG-fill-{i}", "wb") as f:
            written += f.write(b"\\0" * min(2**24, 300 * 2**20 - written))
except OSError:
    pass
time.sleep(4)
raise RuntimeError(f"FILLED {written // 2**20} MiB")
'''

# Reads the service log in the starting dir and lists the other jobs beside its own (cwd = <job>/work).
VIEW_PEEK = '''
import os
seen = []
try:
    seen.append(open(os.path.join(START, "service.log")).read())
except OSError:
    pass
job = os.path.dirname(os.getcwd())
try:
    seen += [n for n in os.listdir(os.path.dirname(job)) if n != os.path.basename(job)]
except OSError:
    pass
raise RuntimeError(f"VIEW {seen}")
'''


@dataclass
class Traps:
    root: Path
    start: Path  # where the warm parents are started, as `crosscheck up` in a user's directory
    drop: Path  # a world-writable dir no fixed list names
    wfile: Path  # a world-writable file
    sock: Path  # a world-writable socket a host service listens on
    secret: str
    dialled: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def traps() -> Iterator[Traps]:
    tag = uuid.uuid4().hex[:12]
    root = Path("/var/lib") / f"crosscheck-hostile-{tag}"  # world-readable, outside every temp dir
    t = Traps(root, root / "start", root / "drop", root / "shared.txt", root / "svc.sock", f"SECRET-{tag}")
    t.start.mkdir(parents=True)
    root.chmod(0o755)
    (t.start / "service.log").write_text(t.secret)
    t.drop.mkdir()
    t.drop.chmod(0o1777)
    t.wfile.write_text("host data")
    t.wfile.chmod(0o666)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(t.sock))
    t.sock.chmod(0o777)
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            t.dialled.append("connected")
            conn.sendall(b"HOST")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield t
    server.close()
    shutil.rmtree(root)
    for path in Path("/run/lock").glob(f"{tag}-*"):
        path.unlink()


def _started_in(warm: WarmParent, folder: Path) -> WarmParent:
    here = os.getcwd()
    os.chdir(folder)
    try:
        warm.start()
    finally:
        os.chdir(here)
    return warm


@pytest.fixture(scope="module")
def fixed(traps: Traps) -> Iterator[WarmParent]:
    with _started_in(WarmParent("sim"), traps.start) as warm:
        yield warm


@pytest.fixture(scope="module")
def unfixed(traps: Traps) -> Iterator[WarmParent]:
    with _started_in(UnfixedViewParent("sim"), traps.start) as warm:
        yield warm


def _message(case: object) -> str:
    error = getattr(case, "error", None)
    assert error is not None, (case.verdict, case)  # type: ignore[attr-defined]
    return str(error.message)


def _ipc(warm: WarmParent, tmp_path: Path) -> tuple[str, int, str]:
    key, host_key = (0x5A000000 | (uuid.uuid4().int & 0xFFFFFF) for _ in range(2))
    queue = f"/cc-{uuid.uuid4().hex[:12]}"
    host = _libc.shmget(host_key, 4096, IPC_CREAT | 0o666)
    assert host >= 0
    body = (IPC_ATTACK.replace("HOST_KEY", str(host_key)).replace("KEY", str(key))
            .replace("QUEUE", repr(queue)))
    try:
        case, raw = run(package(tmp_path / "op", body), warm, tmp_path / "w")
    finally:
        _libc.shmctl(host, IPC_RMID, None)
    left = _libc.shmget(key, 0, 0)
    if left >= 0:
        _libc.shmctl(left, IPC_RMID, None)
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    queue_left = rt.mq_open(queue.encode(), os.O_RDONLY, 0, None)
    if queue_left >= 0:
        rt.mq_unlink(queue.encode())
    assert "ipc_namespace" in raw["isolation"]
    return _message(case), left, "queue left" if queue_left >= 0 else ""


def test_ipc_is_private_and_dies_with_the_job(fixed, tmp_path):
    message, left, queue = _ipc(fixed, tmp_path)
    assert "created=" in message and "created=-1" not in message and "queue=-1" not in message, message
    assert "host_segment=-1" in message, message  # the host's segment is not in its namespace
    assert left == -1 and queue == ""  # nothing it made outlived it


def test_the_unfixed_job_shares_the_hosts_ipc(unfixed, tmp_path):
    message, left, queue = _ipc(unfixed, tmp_path)
    assert "host_segment=-1" not in message, message
    assert left >= 0 and queue == "queue left"


def test_proc_shows_the_jobs_own_processes_only(fixed, tmp_path):
    case, raw = run(package(tmp_path / "op", PROC_PEEK), fixed, tmp_path / "w")
    message = _message(case)
    assert "self=1 " in message, message  # the job is pid 1 of its namespace, and /proc says so
    assert int(message.split("pids=")[1].split()[0]) < 5, message
    assert raw["isolation"]["fresh_proc"] is True


def test_the_unfixed_job_sees_the_hosts_proc(unfixed, tmp_path):
    case, _raw = run(package(tmp_path / "op", PROC_PEEK), unfixed, tmp_path / "w")
    message = _message(case)
    assert "self=1 " not in message and int(message.split("pids=")[1].split()[0]) > 5, message


def _write_attack(warm: WarmParent, traps: Traps, tmp_path: Path) -> tuple[str, list[Path]]:
    tag = traps.root.name.rsplit("-", 1)[1]
    body = (WRITE_ATTACK.replace("TAG", tag).replace("DROP", repr(str(traps.drop)))
            .replace("WFILE", repr(str(traps.wfile))).replace("SOCK", repr(str(traps.sock))))
    case, _raw = run(package(tmp_path / "op", body), warm, tmp_path / "w")
    left = [*Path("/run/lock").glob(f"{tag}-*"), *traps.drop.glob(f"{tag}-*")]
    return _message(case), left


def test_no_world_writable_place_of_the_host_is_writable(fixed, traps, tmp_path):
    message, left = _write_attack(fixed, traps, tmp_path)
    assert "/run/lock" in message and str(traps.drop) in message, message  # writable: its own tmpfs
    assert "file" not in message.split("WRITABLE")[1] and "socket" not in message, message
    assert left == [] and traps.wfile.read_text() == "host data" and traps.dialled == []


def test_the_unfixed_job_writes_where_the_host_keeps_it(unfixed, traps, tmp_path):
    message, left = _write_attack(unfixed, traps, tmp_path)
    try:
        assert "socket HOST" in message and "'file'" in message, message
        assert len(left) == 2 and "TAMPERED" in traps.wfile.read_text()
    finally:
        for path in left:
            path.unlink()
        traps.wfile.write_text("host data")
        traps.dialled.clear()


def test_writing_to_run_lock_counts_against_the_disk_cap(fixed, traps, tmp_path):
    tag = traps.root.name.rsplit("-", 1)[1]
    case, raw = run(package(tmp_path / "op", LOCK_FILL.replace("TAG", tag)), fixed, tmp_path / "w",
                    disk_bytes=128 * MIB)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    assert raw["resource_limit"]["limit"] == "disk"
    assert list(Path("/run/lock").glob(f"{tag}-*")) == []


def test_the_unfixed_job_fills_run_lock_past_the_disk_cap(unfixed, traps, tmp_path):
    tag = traps.root.name.rsplit("-", 1)[1]
    try:
        case, _raw = run(package(tmp_path / "op", LOCK_FILL.replace("TAG", tag)), unfixed, tmp_path / "w",
                         disk_bytes=128 * MIB)
        assert "FILLED 300 MiB" in _message(case)
    finally:
        for path in Path("/run/lock").glob(f"{tag}-*"):
            path.unlink()


def _view(warm: WarmParent, traps: Traps, tmp_path: Path) -> str:
    work = traps.start / f"w-{uuid.uuid4().hex[:8]}"  # `--work-dir` under the starting dir
    other = work / "jobs" / "000-another-tenant"
    other.mkdir(parents=True)
    (other / "bundle.txt").write_text(traps.secret)
    body = VIEW_PEEK.replace("START", repr(str(traps.start)))
    case, _raw = run(package(tmp_path / "op", body), warm, work)
    return _message(case)


def test_neither_the_starting_dir_nor_other_jobs_are_in_view(fixed, traps, tmp_path):
    message = _view(fixed, traps, tmp_path)
    assert message.endswith("VIEW []"), message


def test_the_unfixed_job_sees_the_starting_dir_and_other_jobs(unfixed, traps, tmp_path):
    message = _view(unfixed, traps, tmp_path)
    assert traps.secret in message and "000-another-tenant" in message, message
