"""What the job may see of the host and what it must not write (runtime.fence.hostview), in process.

The sandbox attacks through the real runtime are in tests/hostile/test_host_view.py; these check
the two findings themselves on this host's real mount table and tree.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pypto
import pytest

import runtime
from runtime.fence import hostview, jobview


@pytest.fixture
def trap_dir() -> Iterator[Path]:
    """A world-traversable dir outside every temp dir, removed afterwards."""
    root = Path("/var/lib") / f"crosscheck-scan-{uuid.uuid4().hex[:12]}"
    root.mkdir()
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


def test_code_paths_are_found_by_what_they_are_not_by_sys_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the starting dir named as an import root
    paths = hostview.code_paths()
    runtime_dir = Path(runtime.__file__).resolve().parent
    assert any(runtime_dir.is_relative_to(p) for p in paths), paths  # editable or not: where it was imported from
    assert any(Path(pypto.__file__).resolve().is_relative_to(p) for p in paths), paths
    assert not any(tmp_path.resolve().is_relative_to(p) for p in paths), paths  # never the starting dir
    assert paths == sorted(jobview.outermost(paths))  # outermost only: a bind of each holds the rest


def test_the_scan_finds_world_writable_places_no_list_names(trap_dir):
    drop = trap_dir / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    (drop / "inner").mkdir(mode=0o777)
    shared = trap_dir / "shared.txt"
    shared.write_text("x")
    shared.chmod(0o666)
    closed = trap_dir / "closed"
    closed.mkdir(mode=0o700)
    (closed / "open").mkdir()
    (closed / "open").chmod(0o1777)  # unreachable for others: not worth covering
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(trap_dir / "svc.sock"))
    (trap_dir / "svc.sock").chmod(0o777)
    try:
        found = hostview.scan_writable()
    finally:
        server.close()
    assert drop in found.dirs and drop / "inner" not in found.dirs  # outermost only
    assert shared in found.files and trap_dir / "svc.sock" in found.sockets
    assert closed / "open" not in found.dirs
    assert Path("/tmp") in found.dirs and not any(p.is_relative_to("/proc") for p in found.dirs)


def test_the_scan_in_a_forked_process_answers_the_same(trap_dir):
    (trap_dir / "drop").mkdir()
    (trap_dir / "drop").chmod(0o1777)
    fd = hostview.start_scan()
    assert hostview._scanned(fd).dirs == hostview.scan_writable().dirs


@pytest.mark.parametrize(("folder", "ok"), [("/", False), ("/usr", False), ("/var", False), ("/root", True),
                                            ("/var/lib/x", True), ("/work/checkout", True)])
def test_system_dirs_are_never_narrowed(folder, ok):
    assert hostview.narrowable(Path(folder)) is ok


def test_disk_used_counts_what_a_tmpfs_holds(tmp_path):
    folder = tmp_path / "tmpfs"
    folder.mkdir()
    jobview.mount("tmpfs", str(folder), "tmpfs", 0, "size=16m")
    try:
        assert jobview.disk_used([str(folder)]) == 0
        (folder / "f").write_bytes(os.urandom(4 * 2**20))
        assert jobview.disk_used([str(folder)]) == 4 * 2**20
    finally:
        ctypes.CDLL(None, use_errno=True).umount2(str(folder).encode(), 2)  # MNT_DETACH
