"""The worker's secrets never reach a job's memory (issue 8 item 3).

Every job is a fork of the warm parent. Before the fix the warm parent was exec'd with the
worker's whole environment, so WORKER_TOKEN, API_URL and DATA_DIR sat in the environment strings
on its first stack page, in every job, even after os.environ.clear(). Here a kernel scans every
readable page of its own process for them, through the warm parent exactly as the worker starts
it (worker.warm.WarmHolder); the same scan against the unfixed warm parent finds them.
"""
from __future__ import annotations

import hashlib
import uuid

import pytest

from tests.hostile.evidence_kit import NORMAL, package, run
from tests.hostile.unfixed_sandbox import UnfixedWarmParent
from worker.warm import WarmHolder

pytestmark = pytest.mark.slow

# The kernel's scan. The source holds each secret's first half and a hash of its second half, never
# the whole value, so the scan cannot find the secret in its own code or buffers.
SCAN = '''
import ctypes, hashlib, os

_CHUNK = 32 * 1024 * 1024
_libc = ctypes.CDLL(None, use_errno=True)
_libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
_libc.write.restype = ctypes.c_ssize_t
_COPY = os.memfd_create("scan")  # the kernel copies the job's own memory here: EFAULT, not a crash, where it cannot

def _read(addr, size):
    os.ftruncate(_COPY, 0)
    os.lseek(_COPY, 0, os.SEEK_SET)
    n = _libc.write(_COPY, addr, size)
    return os.pread(_COPY, n, 0) if n > 0 else b""

def scan(needles):
    """needles: name -> (head bytes, sha256 of the tail, tail length); returns (names found, bytes read)."""
    found, total = set(), 0
    for line in open("/proc/self/maps").read().splitlines():
        parts = line.split()
        if "r" not in parts[1] or (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]", "[vvar_vclock]")):
            continue
        lo, hi = (int(v, 16) for v in parts[0].split("-"))
        for start in range(lo, hi, _CHUNK):
            data = _read(start, min(_CHUNK + 256, hi - start))
            total += len(data)
            for name, (head, digest, size) in needles.items():
                at = data.find(head)
                while at >= 0:
                    tail = data[at + len(head):at + len(head) + size]
                    if hashlib.sha256(tail).hexdigest() == digest:
                        found.add(name)
                    at = data.find(head, at + 1)
    return sorted(found), total
'''


def _secrets() -> dict[str, str]:
    tag = uuid.uuid4().hex
    return {"WORKER_TOKEN": f"xcw_{tag}{uuid.uuid4().hex}", "API_URL": f"http://api-{tag}.invalid:8000",
            "DATA_DIR": f"/srv/crosscheck-{tag}/data"}


def _scanning_package(root, secrets: dict[str, str]):
    needles = {}
    for name, value in secrets.items():
        half = len(value) // 2
        needles[name] = (value[:half].encode(), hashlib.sha256(value[half:].encode()).hexdigest(),
                         len(value) - half)
    body = (f"found, total = scan({needles!r})\n"
            "if found:\n    raise RuntimeError(f'LEAK {found} ({total} bytes scanned)')\n"
            "if total < 100 * 2**20:\n    raise RuntimeError(f'scanned only {total} bytes')\n" + NORMAL)
    return package(root, body, prelude=SCAN)


def test_worker_secrets_are_not_in_the_jobs_memory(tmp_path, monkeypatch):
    secrets = _secrets()
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    holder = WarmHolder("sim")
    try:
        case, _raw = run(_scanning_package(tmp_path / "fixed", secrets), holder.get(), tmp_path / "w1")
    finally:
        holder.close()
    # The scan ran to its end and found nothing (no error); its ctypes use is reported (runtime.fence.audit).
    assert case.error is None, case.error
    assert case.verdict == "suspect_fake_pass" and "used ctypes" in case.verdict_reason, case.verdict_reason


def test_the_unfixed_warm_parent_leaks_them(tmp_path, monkeypatch):
    secrets = _secrets()
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    with UnfixedWarmParent("sim") as warm:
        case, _raw = run(_scanning_package(tmp_path / "unfixed", secrets), warm, tmp_path / "w2")
    assert case.error is not None, case.verdict
    assert "LEAK ['API_URL', 'DATA_DIR', 'WORKER_TOKEN']" in case.error.message, case.error.message
