"""The one way the harness reads files from a folder the kernel controls (docs/SECURITY.md).

Rules, for every read, listing and copy:
- each path component is opened under the previous one's fd with O_NOFOLLOW, so no link is ever
  followed, and `..`, absolute paths and empty components are refused;
- only a regular file with a single link is read, owned by the job's uid or by the harness;
- every read has a size cap; logs are read from their tail, never whole;
- when the harness runs as root and knows the job's uid, the opens run with that uid as the
  filesystem uid, so the harness can read nothing the job could not read itself.

Derived files go to a `Sink`: a folder only the harness owns, written through its fd.
"""
from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CHUNK_BYTES = 1 << 20
MAX_WALK_ENTRIES = 20_000
MAX_WALK_DEPTH = 16
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted under a file's name must not block the open; it is refused after fstat.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_QUERY = 0xFFFFFFFF  # an invalid id: setfsuid/setfsgid then only return the current one

_libc = ctypes.CDLL(None, use_errno=True)
for _name in ("setfsuid", "setfsgid"):
    getattr(_libc, _name).argtypes = [ctypes.c_uint32]
    getattr(_libc, _name).restype = ctypes.c_int


class UnsafeFile(OSError):
    """A link, a special file, a hard-linked or foreign-owned file, or a path leaving the folder."""


class TooLarge(OSError):
    """The file is bigger than the cap the caller gave."""


@dataclass(frozen=True)
class Entry:
    """A regular file found by `JobFiles.walk`."""
    rel: str
    size: int
    mtime: float
    ctime: float


def _parts(rel: str | PurePosixPath) -> list[str]:
    text = str(rel)
    if text.startswith("/") or "\x00" in text:
        raise UnsafeFile(f"{text!r}: not a relative path")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeFile(f"{text!r}: '..' leaves the folder")
    return parts


@contextmanager
def as_uid(uid: int | None) -> Iterator[None]:
    """Open files with `uid` as this thread's filesystem uid and gid (root only; else a no-op).

    Linux keeps the filesystem ids per thread, and dropping fsuid 0 also drops the capabilities
    that bypass file permissions, so the kernel checks the job's own permissions on each open.
    """
    if uid is None or os.geteuid() != 0:
        yield
        return
    old_gid = _libc.setfsgid(uid)
    old_uid = _libc.setfsuid(uid)
    try:
        if _libc.setfsuid(_QUERY) != uid or _libc.setfsgid(_QUERY) != uid:
            raise OSError(f"could not take uid {uid} as the filesystem uid")
        yield
    finally:
        _libc.setfsuid(old_uid)
        _libc.setfsgid(old_gid)


class JobFiles:
    """Read-only, link-free access to the files under `root`, with caps.

    `uid` is the job's uid: files are opened as that uid and must be owned by it or by us.
    Refused paths are kept in `refused` (path and reason) for the report.
    """

    def __init__(self, root: Path | str, uid: int | None = None):
        self.root = Path(root)
        self.uid = uid
        self.refused: list[str] = []

    # -- opening -------------------------------------------------------------------------------
    def _open_root(self) -> int:
        return os.open(self.root, _DIR_FLAGS)

    def _open_dir(self, parts: list[str]) -> int:
        """An fd of the folder at `parts` under root, every component opened without following links."""
        fd = self._open_root()  # the harness made root; its ancestors may be closed to the job
        with as_uid(self.uid):
            try:
                for part in parts:
                    try:
                        nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        raise self._why(exc, fd, part) from None
                    os.close(fd)
                    fd = nxt
            except BaseException:
                os.close(fd)
                raise
        return fd

    def _open_in(self, dir_fd: int, name: str, rel: str) -> int:
        """Open the regular file `name` in an open folder and check it; returns its fd."""
        with as_uid(self.uid):
            try:
                fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                raise self._why(exc, dir_fd, name) from None
        try:
            self._check(os.fstat(fd), rel)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _why(self, exc: OSError, dir_fd: int, name: str) -> OSError:
        """Turn ELOOP/ENOTDIR on a link into UnsafeFile; keep other errors (missing file) as they are."""
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return exc
        if stat.S_ISLNK(st.st_mode):
            return UnsafeFile(f"{name}: a symbolic link")
        return exc

    def _check(self, st: os.stat_result, rel: str) -> None:
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{rel}: not a regular file")
        if st.st_nlink != 1:
            raise UnsafeFile(f"{rel}: a hard link ({st.st_nlink} links)")
        if self.uid is not None and st.st_uid not in (self.uid, os.geteuid()):
            raise UnsafeFile(f"{rel}: owned by uid {st.st_uid}, not the job")

    @contextmanager
    def open(self, rel: str | PurePosixPath) -> Iterator[int]:
        """The fd of a checked regular file (closed on exit). Raises UnsafeFile or OSError."""
        parts = _parts(rel)
        if not parts:
            raise UnsafeFile(f"{rel!r}: not a file")
        dir_fd = self._open_dir(parts[:-1])
        try:
            fd = self._open_in(dir_fd, parts[-1], str(rel))
        finally:
            os.close(dir_fd)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- reading -------------------------------------------------------------------------------
    def read(self, rel: str | PurePosixPath, max_bytes: int) -> bytes:
        """The whole file; TooLarge when it holds more than max_bytes."""
        with self.open(rel) as fd:
            if os.fstat(fd).st_size > max_bytes:
                raise TooLarge(f"{rel}: larger than {max_bytes} bytes")
            data = _read_range(fd, 0, max_bytes + 1)
        if len(data) > max_bytes:
            raise TooLarge(f"{rel}: larger than {max_bytes} bytes")
        return data

    def tail(self, rel: str | PurePosixPath, max_bytes: int) -> bytes:
        """At most the last max_bytes of the file, read from disk (never the whole file)."""
        with self.open(rel) as fd:
            size = os.fstat(fd).st_size
            return _read_range(fd, max(0, size - max_bytes), max_bytes)

    def size(self, rel: str | PurePosixPath) -> int | None:
        """The size of a checked regular file; None when missing or refused (refusals are recorded)."""
        try:
            with self.open(rel) as fd:
                return os.fstat(fd).st_size
        except UnsafeFile as exc:
            self.refused.append(str(exc))
        except OSError:
            pass
        return None

    def head(self, rel: str | PurePosixPath, max_bytes: int) -> bytes:
        with self.open(rel) as fd:
            return _read_range(fd, 0, max_bytes)

    def text_tail(self, rel: str | PurePosixPath, max_bytes: int) -> str:
        """The tail as text; '' when the file is missing or refused (refusals are recorded)."""
        try:
            return self.tail(rel, max_bytes).decode("utf-8", "replace")
        except UnsafeFile as exc:
            self.refused.append(str(exc))
        except OSError:
            pass
        return ""

    def read_or_none(self, rel: str | PurePosixPath, max_bytes: int) -> bytes | None:
        """The whole file, or None when missing, too large or refused (refusals are recorded)."""
        try:
            return self.read(rel, max_bytes)
        except UnsafeFile as exc:
            self.refused.append(str(exc))
        except OSError:
            pass
        return None

    # -- listing -------------------------------------------------------------------------------
    def listdir(self, rel: str | PurePosixPath = "", max_entries: int = MAX_WALK_ENTRIES) -> list[tuple[str, str]]:
        """(name, kind) of a folder's entries, kind file | dir | link | other; [] when unreadable.

        At most max_entries (the first the kernel's folder yields; the cut is recorded).
        """
        try:
            fd = self._open_dir(_parts(rel))
        except UnsafeFile as exc:
            self.refused.append(str(exc))
            return []
        except OSError:
            return []
        try:
            found = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    if len(found) >= max_entries:
                        self.refused.append(f"{rel or '.'}: more than {max_entries} entries; the rest was not read")
                        break
                    found.append((entry.name, _kind(entry)))
            return sorted(found)
        finally:
            os.close(fd)

    def is_dir(self, rel: str | PurePosixPath) -> bool:
        try:
            os.close(self._open_dir(_parts(rel)))
        except OSError:
            return False
        return True

    def walk(self, rel: str | PurePosixPath = "", suffix: str = "", max_entries: int = MAX_WALK_ENTRIES,
             max_depth: int = MAX_WALK_DEPTH) -> list[Entry]:
        """Regular files under `rel` (sorted), never entering a link; links met are recorded as refused."""
        base = _parts(rel)
        out: list[Entry] = []
        seen = 0
        full = False
        stack: list[list[str]] = [base]
        while stack and not full:
            parts = stack.pop()
            try:
                fd = self._open_dir(parts)
            except UnsafeFile as exc:
                self.refused.append(str(exc))
                continue
            except OSError:
                continue
            try:
                entries = []
                with os.scandir(fd) as found:
                    for entry in found:  # counted as read: a folder of millions stops here
                        seen += 1
                        if seen > max_entries:
                            self.refused.append(f"{'/'.join(base) or '.'}: more than {max_entries} entries; "
                                                "the rest was not read")
                            full = True
                            break
                        entries.append(entry)
                for entry in sorted(entries, key=lambda e: e.name):
                    path = "/".join([*parts, entry.name])
                    kind = _kind(entry)
                    if kind == "dir" and len(parts) - len(base) < max_depth and not full:
                        stack.append([*parts, entry.name])
                    elif kind == "link":
                        self.refused.append(f"{path}: a symbolic link")
                    elif kind == "file" and (not suffix or entry.name.endswith(suffix)):
                        st = entry.stat(follow_symlinks=False)
                        out.append(Entry(path, st.st_size, st.st_mtime, st.st_ctime))
            finally:
                os.close(fd)
        return sorted(out, key=lambda e: e.rel)

    # -- copying -------------------------------------------------------------------------------
    def copy(self, rel: str | PurePosixPath, sink: Sink, dest: str, max_bytes: int, tail: bool = False) -> bool:
        """Copy one file into a harness-owned Sink; at most max_bytes (its tail when `tail`).

        Without `tail`, a bigger file is skipped (a cut JSON file is worse than none). Returns
        whether a file was written.
        """
        try:
            with self.open(rel) as fd:
                size = os.fstat(fd).st_size
                if size > max_bytes and not tail:
                    return False
                start = max(0, size - max_bytes)
                with sink.create(dest) as out:
                    offset, left = start, min(size, max_bytes)
                    while left > 0:
                        chunk = os.pread(fd, min(CHUNK_BYTES, left), offset)
                        if not chunk:
                            break
                        _write_all(out, chunk)
                        offset += len(chunk)
                        left -= len(chunk)
        except UnsafeFile as exc:
            self.refused.append(str(exc))
            return False
        except OSError:
            return False
        return True


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


def _read_range(fd: int, offset: int, length: int) -> bytes:
    parts: list[bytes] = []
    left = length
    while left > 0:
        chunk = os.pread(fd, min(CHUNK_BYTES, left), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Sink:
    """A folder only the harness owns (mode 0700), written through its fd.

    Holding the fd lets a process write into it after its mount namespace changed. New files and
    folders are created exclusively and never through a link.
    """

    def __init__(self, fd: int):
        self.fd = fd

    @classmethod
    def open(cls, path: Path | str) -> Sink:
        """Open (creating it 0700 when missing) a harness-owned folder."""
        path = Path(path)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, _DIR_FLAGS)
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            os.close(fd)
            raise UnsafeFile(f"{path}: not a folder only the harness can write")
        return cls(fd)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _parent(self, rel: str) -> tuple[int, str]:
        """An fd of rel's folder (created as needed) and rel's last name; caller closes the fd."""
        parts = _parts(rel)
        if not parts:
            raise UnsafeFile(f"{rel!r}: not a file name")
        fd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    @contextmanager
    def create(self, rel: str) -> Iterator[int]:
        """A new file's fd (O_EXCL: an existing name is replaced only by `write`)."""
        dir_fd, name = self._parent(rel)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        try:
            yield fd
        finally:
            os.close(fd)

    def write(self, rel: str, data: bytes) -> None:
        """Write a whole file, replacing an earlier one of the same name."""
        dir_fd, name = self._parent(rel)
        try:
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
        finally:
            os.close(dir_fd)
        with self.create(rel) as fd:
            _write_all(fd, data)
