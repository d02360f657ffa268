"""A job's files: private size-capped /tmp, /var/tmp and /dev/shm, a disk cap for its job dir, and no
sight of the service's data (issue 8 items 4 and 8).

Before the fix a job wrote to the host's RAM-backed /tmp, /var/tmp and /dev/shm (its files outlived
it), saw every other job's dir under /tmp, filled the disk one 2 GiB file at a time, and read the
service's data dir. Each attack runs through the real runtime; the unfixed leader
(tests/hostile/unfixed_parent.py), or a run without the worker's hidden paths, lets it through.
"""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from runtime import verdicts
from tests.hostile.evidence_kit import NORMAL, package, run
from tests.hostile.unfixed_sandbox import UnfixedLimitsParent

pytestmark = pytest.mark.slow

MIB = 2**20

# Leaves a file in each temp dir, looks for the host's canary, then fills /tmp past its 512 MiB cap.
TMP_ATTACK = '''
import os
seen = []
for folder in ("/tmp", "/var/tmp", "/dev/shm"):
    with open(os.path.join(folder, "TAG-left-behind"), "w") as f:
        f.write("x")
    seen += [f"{folder}/{n}" for n in os.listdir(folder) if n.startswith("CANARY")]
written = 0
try:
    with open("/tmp/TAG-fill", "wb") as f:
        chunk = b"\\0" * (16 * 2**20)
        while written < 600 * 2**20:
            written += f.write(chunk)
            f.flush()
except OSError:
    pass
os.unlink("/tmp/TAG-fill")
if seen or written >= 600 * 2**20:
    raise RuntimeError(f"TMP saw {seen}, wrote {written // 2**20} MiB")
'''

# Fills its job dir 64 MiB at a time, each file under the per-file limit, up to 1.5 GiB.
DISK_FILL = '''
import os
written = 0
for i in range(24):
    with open(f"fill-{i}", "wb") as f:
        chunk = b"\\1" * (16 * 2**20)
        for _ in range(4):
            written += f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
raise RuntimeError(f"FILLED {written // 2**20} MiB")
'''

# Looks for the service's files: the databases, a bundle, the log with the admin token.
DATA_PEEK = '''
import os
found = []
for rel in ("crosscheck.db", "broker.db", "blobs/bundle.tar.gz", "logs/up.log"):
    try:
        found.append(open(os.path.join(DATA, rel)).read().strip())
    except OSError:
        pass
try:
    found += os.listdir(DATA)
except OSError:
    pass
if found:
    raise RuntimeError(f"DATA {found}")
'''


@pytest.fixture
def canaries():
    """A host file in each temp dir that no job may see, and clean-up of what jobs leave."""
    tag = uuid.uuid4().hex[:12]
    made = [Path(d) / f"CANARY-{tag}" for d in ("/tmp", "/var/tmp", "/dev/shm")]
    for path in made:
        path.write_text("host file")
    yield tag
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        for path in Path(folder).glob(f"*{tag}*"):
            path.unlink()


def _left_behind(tag: str) -> list[str]:
    return [str(p) for d in ("/tmp", "/var/tmp", "/dev/shm") for p in Path(d).glob(f"{tag}-*")]


def test_temp_dirs_are_private_and_capped(warm_sim, tmp_path, canaries):
    body = TMP_ATTACK.replace("TAG", canaries) + NORMAL
    case, raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w")
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert raw["isolation"]["private_tmp"] is True
    assert _left_behind(canaries) == []


def test_the_unfixed_leader_shares_the_hosts_temp_dirs(tmp_path, canaries):
    body = TMP_ATTACK.replace("TAG", canaries) + NORMAL
    with UnfixedLimitsParent("sim") as warm:
        case, _raw = run(package(tmp_path / "op", body), warm, tmp_path / "w")
    assert case.error is not None and "TMP saw" in case.error.message, (case.verdict, case.error)
    assert f"CANARY-{canaries}" in case.error.message
    assert int(case.error.message.split("wrote ")[1].split()[0]) >= 600
    assert len(_left_behind(canaries)) == 3


def test_filling_the_job_dir_is_stopped_at_the_disk_limit(warm_sim, tmp_path):
    case, raw = run(package(tmp_path / "op", DISK_FILL), warm_sim, tmp_path / "w", disk_bytes=256 * MIB)
    assert case.verdict == verdicts.RESOURCE_LIMIT, (case.verdict, case.error)
    assert "disk limit" in case.verdict_reason and "--disk GIB" in case.verdict_reason
    assert raw["resource_limit"]["limit"] == "disk"


def test_the_unfixed_leader_lets_the_job_dir_fill(tmp_path):
    with UnfixedLimitsParent("sim") as warm:
        case, _raw = run(package(tmp_path / "op", DISK_FILL), warm, tmp_path / "w", disk_bytes=256 * MIB)
    assert case.error is not None and "FILLED 1536 MiB" in case.error.message, (case.verdict, case.error)


@pytest.fixture
def data_dir():
    """A service data dir outside /tmp, world-readable on purpose: only hiding it can protect it."""
    root = Path("/var/lib") / f"crosscheck-hostile-{uuid.uuid4().hex[:12]}"
    secret = f"SECRET-{uuid.uuid4().hex}"
    for rel in ("crosscheck.db", "broker.db", "blobs/bundle.tar.gz", "logs/up.log"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{secret} {rel}")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield root, secret
    shutil.rmtree(root)


def test_the_service_data_dir_is_hidden_from_the_job(warm_sim, tmp_path, data_dir):
    root, secret = data_dir
    body = DATA_PEEK.replace("DATA", repr(str(root))) + NORMAL
    case, raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w", hide_paths=[root])
    assert case.verdict == verdicts.SIM_OUTPUT_UNWRITTEN, (case.verdict, case.error)
    assert raw["isolation"]["hidden"] == [str(root)]
    assert secret not in str(case.logs)


def test_without_hiding_the_job_reads_the_data_dir(warm_sim, tmp_path, data_dir):
    root, secret = data_dir
    body = DATA_PEEK.replace("DATA", repr(str(root))) + NORMAL
    case, _raw = run(package(tmp_path / "op", body), warm_sim, tmp_path / "w")
    assert case.error is not None and secret in case.error.message and "logs/up.log" in case.error.message
