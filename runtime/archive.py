"""Safe unpacking of submitted .zip and .tar.gz packages."""
from __future__ import annotations

import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from runtime.errors import SubmissionError

MAX_ARCHIVE_BYTES = 20 * 1024 * 1024
MAX_UNPACKED_BYTES = 100 * 1024 * 1024
MAX_MEMBERS = 2000
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _check_member_name(archive: str, name: str) -> PurePosixPath:
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise SubmissionError(f"{archive}: member '{name}' has an absolute path")
    if ".." in pure.parts:
        raise SubmissionError(f"{archive}: member '{name}' contains '..'")
    return pure


def _check_totals(archive: str, count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise SubmissionError(f"{archive}: too many members ({count} > {MAX_MEMBERS})")
    if total > MAX_UNPACKED_BYTES:
        raise SubmissionError(
            f"{archive}: oversized archive: unpacks to {total} bytes (limit {MAX_UNPACKED_BYTES})"
        )


def unpack(path: Path, dest: Path) -> Path:
    """Unpack `path` into `dest` after checking every member; returns `dest`."""
    size = path.stat().st_size
    if size > MAX_ARCHIVE_BYTES:
        raise SubmissionError(f"{path.name}: oversized archive: {size} bytes (limit {MAX_ARCHIVE_BYTES})")
    dest.mkdir(parents=True, exist_ok=True)
    if path.name.lower().endswith(".zip"):
        _unpack_zip(path, dest)
    else:
        _unpack_tar(path, dest)
    return dest


def _unpack_zip(path: Path, dest: Path) -> None:
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise SubmissionError(f"{path.name}: not a valid zip archive ({exc})") from None
    with zf:
        infos = zf.infolist()
        _check_totals(path.name, len(infos), sum(i.file_size for i in infos))
        for info in infos:
            pure = _check_member_name(path.name, info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise SubmissionError(f"{path.name}: member '{info.filename}' is a link")
            target = dest.joinpath(*pure.parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                # Read with a cap: the declared size in the header may lie.
                data = src.read(MAX_UNPACKED_BYTES + 1)
                if len(data) > MAX_UNPACKED_BYTES:
                    raise SubmissionError(f"{path.name}: oversized archive: member '{info.filename}' too large")
                out.write(data)


def _unpack_tar(path: Path, dest: Path) -> None:
    try:
        tf = tarfile.open(path, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise SubmissionError(f"{path.name}: not a valid tar.gz archive ({exc})") from None
    with tf:
        try:
            members = tf.getmembers()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise SubmissionError(f"{path.name}: corrupt tar archive ({exc})") from None
        _check_totals(path.name, len(members), sum(m.size for m in members if m.isfile()))
        for member in members:
            pure = _check_member_name(path.name, member.name)
            if member.issym() or member.islnk():
                raise SubmissionError(f"{path.name}: member '{member.name}' is a link")
            if not (member.isfile() or member.isdir()):
                raise SubmissionError(f"{path.name}: member '{member.name}' is not a regular file")
            target = dest.joinpath(*pure.parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(member)
            if src is None:
                raise SubmissionError(f"{path.name}: member '{member.name}' cannot be read")
            with src, open(target, "wb") as out:
                out.write(src.read())
