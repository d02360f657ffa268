"""What a job can ask of the host's kernel beyond its limits (issue 33): inodes, user namespaces, keyrings.

Before this a job made 128k empty files in 8 s on the host filesystem (the disk cap counts bytes), made a user
namespace (no seccomp filter) and left keys in its uid's keyring, which outlives it while job uids repeat. Each
attack runs through the real runtime; each test failed on the code before the fix.
"""
from __future__ import annotations

import pytest

from runtime import verdicts
from runtime.fence import sandbox
from tests.hostile.evidence_kit import package, run

pytestmark = pytest.mark.slow

MIB = 2**20

# Empty files in a folder until far past the cap, then it waits: the leader's poll must stop it.
EMPTY_FILES = '''
import os, time
os.makedirs(FOLDER, exist_ok=True)
made = 0
try:
    for i in range(40000):
        os.close(os.open(os.path.join(FOLDER, f"e{i}"), os.O_CREAT | os.O_WRONLY))
        made += 1
except OSError:
    pass
time.sleep(5)
raise RuntimeError(f"MADE {made} files")
'''

# A user namespace and a key in the uid's keyring, through the C library.
NAMESPACE_AND_KEY = '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
userns = libc.unshare(0x10000000)
userns_errno = ctypes.get_errno()
key = libc.syscall(248, b"user", b"crosscheck-left", b"secret", 6, -4)  # add_key into KEY_SPEC_USER_KEYRING
key_errno = ctypes.get_errno()
raise RuntimeError(f"USERNS {userns} {userns_errno} KEY {key} {key_errno} THREADS-OK")
'''


@pytest.mark.parametrize("folder", ["job dir", "/tmp"])
def test_empty_files_stop_at_the_file_limit(warm_sim, tmp_path, folder):
    body = EMPTY_FILES.replace("FOLDER", repr("many") if folder == "job dir" else repr("/tmp/many"))
    case, raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w", disk_bytes=256 * MIB)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    files = sandbox.Limits(disk_bytes=256 * MIB).files
    assert raw["resource_limit"]["limit"] == "files", raw["resource_limit"]
    assert f"{files} files and folders" in case.verdict_reason and "--disk GIB" in case.verdict_reason


def test_no_user_namespace_and_no_keyring_for_a_job(warm_sim, tmp_path):
    case, _raw = run(package(tmp_path / "op", NAMESPACE_AND_KEY), warm_sim, tmp_path / "w")
    assert case.error is not None and "USERNS" in case.error.message, (case.verdict, case.error)
    userns, userns_errno, key, key_errno = case.error.message.split("USERNS ")[1].split(" THREADS")[0].replace(
        "KEY ", "").split()
    assert (userns, userns_errno) == ("-1", "1"), case.error.message  # EPERM
    assert (key, key_errno) == ("-1", "1"), case.error.message
