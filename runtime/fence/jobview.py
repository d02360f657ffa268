"""The job's view of the filesystem, built by its leader inside the job's new mount namespace.

What the job sees (docs/SECURITY.md, "The job's view of the host"): the host's system dirs, the
code it runs (runtime.fence.hostview) read-only, its inputs and its own dirs. Every place others may
write gets a private, size-capped tmpfs (its use counts against the job's disk cap) or is made
unwritable; the starting dir, other jobs' dirs and closed dirs hold only what the job needs.
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from pathlib import Path

from runtime.fence import hostview

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
CLONE_NEWNS = 0x00020000

_libc = ctypes.CDLL(None, use_errno=True)


def mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(src.encode() if src else None, target.encode(), fstype.encode() if fstype else None,
                   ctypes.c_ulong(flags), data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


@dataclass
class View:
    """What the leader set up, for the isolation report and the disk guard."""
    private_dirs: list[str] = field(default_factory=list)  # fresh tmpfs over each world-writable dir
    covered: list[str] = field(default_factory=list)  # world-writable files and sockets made unusable
    narrowed: list[str] = field(default_factory=list)  # dirs replaced by a tmpfs holding only what it needs


def needed_paths(job_dir: Path, expose: list[Path]) -> list[Path]:
    """What the job must reach: the code it runs, its job dir (inputs included) and the harness's
    files it reads (the warm parent's config, the calculator cache)."""
    return sorted({*hostview.learn().code, job_dir.resolve(), *(p.resolve() for p in expose if p.exists())})


def private_dirs(view: View, size_bytes: int, needed: list[Path], job_dir: Path, notes: list[str],
                 files: int) -> bool:
    """A fresh tmpfs of `size_bytes` and `files` inodes over every world-writable dir of the host (/tmp, /run/lock ...).

    What the job writes there vanishes with its mount namespace. The needed paths under such a dir
    (its job dir, the warm parent's scratch, a venv in /tmp) are bound back, exactly, and read-only
    except the job dir: the rest of the host's dir, other jobs' dirs included, is out of sight.
    """
    old_umask = os.umask(0o022)  # the dirs made below must be traversable by the job's uid (docs/SECURITY.md)
    try:
        return _private_dirs(view, size_bytes, needed, job_dir.resolve(), notes, files)
    finally:
        os.umask(old_umask)


def _private_dirs(view: View, size_bytes: int, needed: list[Path], job: Path, notes: list[str], files: int) -> bool:
    done = True
    for folder in hostview.learn().writable.dirs:
        if folder.is_symlink() or not folder.is_dir():
            continue
        keep = outermost([p for p in needed if p.is_relative_to(folder) and p != folder and p.exists()])
        fds = {path: os.open(path, os.O_PATH) for path in keep}
        try:
            # nr_inodes: the kernel refuses files past the job's file cap (ENOSPC) in each of them
            mount("tmpfs", str(folder), "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size_bytes},nr_inodes={files}")
            view.private_dirs.append(str(folder))
            for path, fd in fds.items():
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    path.mkdir(parents=True, exist_ok=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                mount(f"/proc/self/fd/{fd}", str(path), None, MS_BIND | MS_REC)
                if not job.is_relative_to(path):
                    mount(None, str(path), None, MS_BIND | MS_REMOUNT | MS_RDONLY)
        except OSError as exc:
            notes.append(f"no private {folder}: {exc}")
            done = False
        finally:
            for fd in fds.values():
                os.close(fd)
    return done


def cover_writable_files(view: View, notes: list[str]) -> None:
    """World-writable files become read-only; sockets and FIFOs others may write are covered with /dev/null
    (a host service listening on a path, e.g. a database's socket, is then out of reach)."""
    writable = hostview.learn().writable
    for path in writable.files:
        try:
            mount(str(path), str(path), None, MS_BIND)
            mount(None, str(path), None, MS_BIND | MS_REMOUNT | MS_RDONLY)
            view.covered.append(str(path))
        except OSError as exc:
            notes.append(f"not covered: {path}: {exc}")
    for path in writable.sockets:
        try:
            mount("/dev/null", str(path), None, MS_BIND)
            view.covered.append(str(path))
        except OSError as exc:
            notes.append(f"not covered: {path}: {exc}")


def narrow(view: View, job_dir: Path, needed: list[Path], closed_too: bool, notes: list[str]) -> None:
    """Replace dirs the job must not browse by a tmpfs holding binds of just what it needs under them.

    Those are: the dir the harness was started from (it may hold logs, data, other work), the dir
    holding the job's and other jobs' dirs, and, when the job drops to its own uid, every closed dir
    (e.g. /root, mode 0700) on the way to a needed path. Deepest first: a shallower one then binds
    the narrowed deeper one (recursively, submounts included). / and system dirs are never narrowed.
    """
    job = job_dir.resolve()
    start = hostview.learn().starting_dir
    targets = {job.parent}
    if start is not None:
        targets.add(start)
    if closed_too:
        targets.update(anc for p in needed for anc in p.parents if _is_closed(anc))
    private = [Path(d) for d in view.private_dirs]
    for folder in sorted(targets, key=lambda p: len(p.parts), reverse=True):
        if (not hostview.narrowable(folder) or not folder.is_dir() or any(folder.is_relative_to(d) for d in private)
                or any(folder.is_relative_to(p) for p in needed)):  # a venv started from: code, kept whole
            continue
        children = {folder / p.relative_to(folder).parts[0] for p in needed if p != folder and p.is_relative_to(folder)}
        try:
            _expose_through(folder, children, job)
            view.narrowed.append(str(folder))
        except OSError as exc:
            notes.append(f"not narrowed: {folder}: {exc}")


def _is_closed(path: Path) -> bool:
    """Others cannot traverse this directory (e.g. /root or pytest's tmp root, mode 0700)."""
    try:
        return path != Path("/") and not os.stat(path).st_mode & 0o001
    except OSError:
        return False


def _expose_through(folder: Path, children: set[Path], job: Path) -> None:
    """Replace `folder` with an empty, traversable tmpfs holding only `children`, read-only except the
    one holding the job dir. Secrets elsewhere under it (e.g. /root/.ssh) stay invisible to the job."""
    fds = {child: os.open(child, os.O_PATH) for child in children if child.exists()}
    old_umask = os.umask(0o022)  # whatever the worker's umask, the dirs made here are traversable
    try:
        mount("tmpfs", str(folder), "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
        for child, fd in fds.items():
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                child.mkdir(parents=True, exist_ok=True)
            else:
                child.touch()
            mount(f"/proc/self/fd/{fd}", str(child), None, MS_BIND | MS_REC)
            if not job.is_relative_to(child):
                mount(None, str(child), None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    finally:
        os.umask(old_umask)
        for fd in fds.values():
            os.close(fd)


def private_ipc_mounts(notes: list[str]) -> None:
    """After the job's new IPC namespace: its own POSIX message queue filesystem, where the host has one."""
    if os.path.isdir("/dev/mqueue"):
        try:
            mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as exc:
            notes.append(f"no private /dev/mqueue: {exc}")


def fresh_proc() -> None:
    """In the job process (pid 1 of its PID namespace, still privileged): a /proc of its own processes.

    A mount namespace of its own first, so the leader keeps the host's /proc for its watch.
    """
    if _libc.unshare(ctypes.c_int(CLONE_NEWNS)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def files_used(dirs: list[str]) -> int:
    """Files and folders on the job's private tmpfs dirs (inodes in use, each root included)."""
    total = 0
    for folder in dirs:
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        total += st.f_files - st.f_ffree
    return total


def disk_used(dirs: list[str]) -> int:
    """Bytes in use on the job's private tmpfs dirs, as the leader (in the job's mount namespace) sees them."""
    total = 0
    for folder in dirs:
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        total += (st.f_blocks - st.f_bfree) * st.f_frsize
    return total


def outermost(paths: list[Path]) -> list[Path]:
    """The paths not inside another of them."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept
