"""Operator bundles and artifact tarballs: the one archive reader (one set of safety rules) and
the one deterministic zip writer.

Every archive we read came from someone else (a submitter, or a worker that ran untrusted kernel
code), so every reader here applies the same rules before anything is written or returned:
- member names are relative, without `..` (nothing lands outside the destination);
- only regular files and folders: links, devices and FIFOs are refused, never created;
- at most `Limits.members` members and `Limits.unpacked_bytes` bytes, counted while reading
  (a zip header's declared size may lie);
- a compressed size within `Limits.archive_bytes`, checked first, and a tarball's declared sizes
  summed as each header is read, its decompressed stream capped: tarfile decompresses a member's
  data to reach the next header, so a 3.3 KB bz2 tar declaring gigabytes once cost 13 s of CPU
  before any size was looked at (docs/SECURITY.md).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import IO

from runtime.errors import SubmissionError

MAX_ARCHIVE_BYTES = 20 * 1024 * 1024
MAX_UNPACKED_BYTES = 100 * 1024 * 1024
MAX_MEMBERS = 2000
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
ZIP_EPOCH = (2020, 1, 1, 0, 0, 0)  # every member's time in the zips we write
CHUNK_BYTES = 1024 * 1024


class UnsafeArchive(SubmissionError):
    """The archive breaks a rule above, or cannot be read; the message names the member."""


HEADER_ROOM_BYTES = 8 * 1024  # per member: its header, a long name's extra header, padding
READ_ERRORS = (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, lzma.LZMAError)


@dataclass(frozen=True)
class Limits:
    members: int
    unpacked_bytes: int
    archive_bytes: int | None = MAX_ARCHIVE_BYTES  # compressed; None: the caller bounds it


@dataclass(frozen=True)
class _Member:
    name: PurePosixPath
    is_dir: bool
    size: int  # as declared
    open: Callable[[], IO[bytes]]


def bundle_limits() -> Limits:
    """The limits for a submitted operator bundle."""
    return Limits(MAX_MEMBERS, MAX_UNPACKED_BYTES)


def is_archive(path: PurePath) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def write_zip(files: Iterable[tuple[str, bytes]]) -> bytes:
    """A deflated zip of (path, bytes) in path order, with fixed times and modes: the same files
    always give the same bytes, so the same sha256."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in sorted(files):
            info = zipfile.ZipInfo(name, ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED  # a bare ZipInfo would be stored uncompressed
            zf.writestr(info, data)
    return buf.getvalue()


def unpack(path: Path, dest: Path, limits: Limits | None = None) -> Path:
    """Unpack the archive at `path` into `dest` after checking every member; returns `dest`."""
    size = path.stat().st_size
    if size > MAX_ARCHIVE_BYTES:
        raise UnsafeArchive(f"{path.name}: oversized archive: {size} bytes (limit {MAX_ARCHIVE_BYTES})")
    with open(path, "rb") as f:
        unpack_stream(f, path.name, dest, limits)
    return dest


def unpack_stream(fileobj: IO[bytes], label: str, dest: Path, limits: Limits | None = None) -> None:
    """Unpack an archive read from `fileobj` into `dest` (`label` names it in errors and says
    whether it is a zip)."""
    limits = limits or bundle_limits()
    dest.mkdir(parents=True, exist_ok=True)
    with _members(fileobj, label, limits) as members:
        left = limits.unpacked_bytes
        for m in members:
            target = dest.joinpath(*m.name.parts)
            try:
                if m.is_dir:
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with m.open() as src, open(target, "wb") as out:
                    left -= _copy(src, out, left, label, m)
            except READ_ERRORS as exc:
                raise UnsafeArchive(f"{label}: member '{m.name}' cannot be unpacked ({exc})") from None


def read_files(data: bytes, label: str, keep: Callable[[PurePosixPath], bool], max_file_bytes: int,
               max_files: int, limits: Limits | None = None) -> dict[str, bytes]:
    """{path: bytes} of the kept files of an archive held in memory, at most `max_files`;
    files declared larger than `max_file_bytes` are left out."""
    limits = limits or bundle_limits()
    out: dict[str, bytes] = {}
    with _members(io.BytesIO(data), label, limits) as members:
        for m in members:
            if len(out) >= max_files:
                break
            if m.is_dir or m.size > max_file_bytes or not keep(m.name):
                continue
            buf = io.BytesIO()
            try:
                with m.open() as src:
                    _copy(src, buf, max_file_bytes, label, m)
            except READ_ERRORS as exc:
                raise UnsafeArchive(f"{label}: member '{m.name}' cannot be read ({exc})") from None
            out[m.name.as_posix()] = buf.getvalue()
    return out


def _copy(src: IO[bytes], out: IO[bytes], cap: int, label: str, m: _Member) -> int:
    copied = 0
    while chunk := src.read(CHUNK_BYTES):
        copied += len(chunk)
        if copied > cap:
            raise UnsafeArchive(f"{label}: oversized archive: member '{m.name}' goes past the limit")
        out.write(chunk)
    return copied


@contextmanager
def _members(fileobj: IO[bytes], label: str, limits: Limits) -> Iterator[list[_Member]]:
    """The archive's members, every one checked against the rules above."""
    size = fileobj.seek(0, io.SEEK_END)
    fileobj.seek(0)
    if limits.archive_bytes is not None and size > limits.archive_bytes:
        raise UnsafeArchive(f"{label}: oversized archive: {size} bytes (limit {limits.archive_bytes})")
    if label.lower().endswith(".zip"):
        try:
            zf = zipfile.ZipFile(fileobj)
        except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:  # a UTF-8 flagged name that is not
            raise UnsafeArchive(f"{label}: not a valid zip archive ({exc})") from None
        with zf:
            yield _checked(label, limits, [_zip_member(label, zf, i) for i in zf.infolist()])
        return
    cap = limits.unpacked_bytes + (limits.members + 2) * HEADER_ROOM_BYTES
    try:
        tf = tarfile.open(fileobj=_Capped(_decompressed(fileobj), cap, label), mode="r:")
    except READ_ERRORS as exc:
        raise UnsafeArchive(f"{label}: not a readable .tar.gz archive ({exc})") from None
    with tf:
        infos: list[tarfile.TarInfo] = []
        declared = 0
        try:
            for info in tf:  # counted as they are read: 400,000 empty members stop at the limit
                infos.append(info)
                declared += info.size  # before the next header, which lies past this member's data
                if len(infos) > limits.members:
                    raise UnsafeArchive(f"{label}: too many members (more than {limits.members})")
                if declared > limits.unpacked_bytes:
                    raise UnsafeArchive(f"{label}: oversized archive: its members declare more than "
                                        f"{limits.unpacked_bytes} bytes (at '{info.name}')")
        except READ_ERRORS as exc:
            raise UnsafeArchive(f"{label}: not a readable .tar.gz archive ({exc})") from None
        yield _checked(label, limits, [_tar_member(label, tf, i) for i in infos])


def _decompressed(fileobj: IO[bytes]) -> IO[bytes]:
    """The tarball's bytes, decompressed by its magic (gzip, bz2, xz) or as they are."""
    magic = fileobj.read(6)
    fileobj.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=fileobj, mode="rb")
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(fileobj)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(fileobj)
    return fileobj


class _Capped(io.RawIOBase):
    """A read-only view that refuses to go past `cap` decompressed bytes (reads and forward seeks alike)."""

    def __init__(self, inner: IO[bytes], cap: int, label: str):
        self.inner, self.cap, self.label = inner, cap, label

    def _check(self, end: int) -> None:
        if end > self.cap:
            raise UnsafeArchive(f"{self.label}: oversized archive: it unpacks past {self.cap} bytes")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        start = self.inner.tell()
        self._check(start + size if size is not None and size >= 0 else self.cap + 1)
        return self.inner.read(size)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset if whence == io.SEEK_SET else self.inner.tell() + offset
        if whence not in (io.SEEK_SET, io.SEEK_CUR):
            raise io.UnsupportedOperation("seek from the end of a decompressed stream")
        self._check(target)
        return self.inner.seek(target)

    def tell(self) -> int:
        return self.inner.tell()


def _checked(label: str, limits: Limits, members: list[_Member]) -> list[_Member]:
    if len(members) > limits.members:
        raise UnsafeArchive(f"{label}: too many members ({len(members)} > {limits.members})")
    total = sum(m.size for m in members if not m.is_dir)
    if total > limits.unpacked_bytes:
        raise UnsafeArchive(f"{label}: oversized archive: unpacks to {total} bytes (limit {limits.unpacked_bytes})")
    return members


def _name(label: str, name: str) -> PurePosixPath:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # tarfile keeps undecodable bytes as surrogates
        raise UnsafeArchive(f"{label}: member {ascii(name)} has a name that is not UTF-8") from None
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"{label}: member '{name}' escapes the folder: it has an absolute path")
    if ".." in pure.parts:
        raise UnsafeArchive(f"{label}: member '{name}' escapes the folder: it contains '..'")
    if not pure.parts:
        raise UnsafeArchive(f"{label}: a member has an empty name")
    return pure


def _zip_member(label: str, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> _Member:
    pure = _name(label, info.filename)
    if stat.S_ISLNK(info.external_attr >> 16):
        raise UnsafeArchive(f"{label}: member '{info.filename}' is a link")
    return _Member(pure, info.is_dir(), info.file_size, lambda: zf.open(info))


def _tar_member(label: str, tf: tarfile.TarFile, info: tarfile.TarInfo) -> _Member:
    pure = _name(label, info.name)
    if info.issym() or info.islnk():
        raise UnsafeArchive(f"{label}: member '{info.name}' is a link")
    if not (info.isfile() or info.isdir()):
        raise UnsafeArchive(f"{label}: member '{info.name}' is not a regular file or folder")

    def open_member() -> IO[bytes]:
        handle = tf.extractfile(info)
        if handle is None:
            raise UnsafeArchive(f"{label}: member '{info.name}' cannot be read")
        return handle

    return _Member(pure, info.isdir(), info.size, open_member)
