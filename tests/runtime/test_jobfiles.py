"""The safe job-file reader: no link followed anywhere, regular files only, caps, the job's own uid."""
from __future__ import annotations

import os
import resource

import pytest

from runtime.fence.jobfiles import JobFiles, Sink, TooLarge, UnsafeFile

JOB_UID = 231_977  # an id no account uses


@pytest.fixture()
def job(tmp_path):
    root = tmp_path / "job"
    (root / "logs" / "debug").mkdir(parents=True)
    (root / "logs" / "debug" / "a.log").write_text("hello\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    return root, secret


def test_reads_a_regular_file(job):
    root, _ = job
    assert JobFiles(root).read("logs/debug/a.log", 100) == b"hello\n"


@pytest.mark.parametrize("where", ["file", "dir", "root-level dir"])
def test_a_link_is_never_followed(job, where):
    root, secret = job
    if where == "file":
        (root / "logs" / "debug" / "b.log").symlink_to(secret)
        rel = "logs/debug/b.log"
    elif where == "dir":
        (root / "logs" / "linked").symlink_to(secret.parent)
        rel = "logs/linked/secret.txt"
    else:
        (root / "up").symlink_to(secret.parent)
        rel = "up/secret.txt"
    files = JobFiles(root)
    with pytest.raises(UnsafeFile, match="symbolic link"):
        files.read(rel, 100)
    assert files.text_tail(rel, 100) == "" and files.refused


@pytest.mark.parametrize("rel", ["/etc/passwd", "../secret.txt", "logs/../../secret.txt", "a\x00b"])
def test_paths_leaving_the_folder_are_refused(job, rel):
    with pytest.raises(UnsafeFile):
        JobFiles(job[0]).read(rel, 100)


def test_a_fifo_is_refused_without_blocking(job):
    root, _ = job
    os.mkfifo(root / "logs" / "pipe.log")
    with pytest.raises(UnsafeFile, match="not a regular file"):
        JobFiles(root).read("logs/pipe.log", 100)


def test_a_hard_link_is_refused(job):
    root, secret = job
    os.link(secret, root / "logs" / "hard.log")
    with pytest.raises(UnsafeFile, match="hard link"):
        JobFiles(root).read("logs/hard.log", 100)


def test_size_cap_and_tail(job):
    root, _ = job
    big = root / "stdout.txt"
    with open(big, "wb") as f:
        f.truncate(6 * 1024**3)  # sparse: 6 GiB that would not fit in this test's memory budget
        f.seek(6 * 1024**3 - 5)
        f.write(b"TAIL!")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    files = JobFiles(root)
    assert files.tail("stdout.txt", 5) == b"TAIL!"
    assert len(files.tail("stdout.txt", 1024 * 1024)) == 1024 * 1024
    with pytest.raises(TooLarge):
        files.read("stdout.txt", 1024)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: no whole read


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
def test_reads_as_the_jobs_uid(job):
    root, _ = job
    private = root / "logs" / "root-only.log"
    private.write_text("root's")
    private.chmod(0o600)  # owned by us (root): the owner check passes, the job's permissions do not
    os.chown(root / "logs" / "debug" / "a.log", JOB_UID, JOB_UID)
    files = JobFiles(root, uid=JOB_UID)
    with pytest.raises(PermissionError):
        files.read("logs/root-only.log", 100)
    assert files.read("logs/debug/a.log", 100) == b"hello\n"
    assert JobFiles(root).read("logs/root-only.log", 100) == b"root's"  # as root, without a uid
    assert private.read_text() == "root's"  # our own ids came back


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown")
def test_files_of_another_owner_are_refused(job):
    root, _ = job
    os.chown(root / "logs" / "debug" / "a.log", JOB_UID + 1, JOB_UID + 1)
    with pytest.raises(UnsafeFile, match="owned by uid"):
        JobFiles(root, uid=JOB_UID).read("logs/debug/a.log", 100)


def test_walk_lists_files_and_never_enters_links(job, tmp_path):
    root, secret = job
    (root / "logs" / "out").symlink_to(tmp_path)
    (root / "logs" / "debug" / "s.log").symlink_to(secret)
    files = JobFiles(root)
    assert [e.rel for e in files.walk("logs")] == ["logs/debug/a.log"]
    assert sorted(files.refused) == ["logs/debug/s.log: a symbolic link", "logs/out: a symbolic link"]
    assert [e.rel for e in JobFiles(root).walk("logs", max_entries=1)] == []


def test_copy_caps_into_a_sink_and_never_writes_through_a_link(job, tmp_path):
    root, secret = job
    (root / "stdout.txt").write_bytes(b"x" * 1000 + b"END")
    dest = tmp_path / "evidence"
    files = JobFiles(root)
    with Sink.open(dest) as sink:
        assert files.copy("stdout.txt", sink, "stdout.txt", 10, tail=True)
        assert not files.copy("stdout.txt", sink, "whole.txt", 10)  # too big to copy whole
        (dest / "planted").symlink_to(secret)
        with pytest.raises(FileExistsError), sink.create("planted"):
            pass
    assert (dest / "stdout.txt").read_bytes() == b"xxxxxxxEND"
    assert not (dest / "whole.txt").exists() and secret.read_text() == "TOP-SECRET"
    assert oct(dest.stat().st_mode & 0o777) == "0o700"


def test_a_sink_must_be_the_harnesss_alone(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafeFile):
        Sink.open(shared)


def test_listing_a_huge_folder_stops_at_its_cap(job):
    root, _ = job
    many = root / "output"
    many.mkdir()
    for i in range(50):
        (many / f"f{i:02d}").write_text("x")
    files = JobFiles(root)
    assert len(files.listdir("output", max_entries=10)) == 10
    assert len(files.walk("output", max_entries=10)) == 10
    assert sum("more than 10 entries" in r for r in files.refused) == 2
