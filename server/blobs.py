"""Bundles and artifacts on disk: content-addressed bundles, one folder of artifacts per job."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path, PurePosixPath

from server.errors import InvalidInput, NotFound


class BlobStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def put_bundle(self, data: bytes, suffix: str) -> tuple[str, str]:
        """Store a bundle once per sha256; returns (sha256, relative path)."""
        digest = hashlib.sha256(data).hexdigest()
        rel = f"bundles/{digest[:2]}/{digest}{suffix}"
        path = self.root / rel
        if not path.exists():
            # Private to the service's uid: bundles are other people's code (docs/SECURITY.md).
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # A temp name of its own per call (O_EXCL, 0600): two threads of one process storing the same
            # bundle at once each write their own file, and the second rename replaces an identical one.
            fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)  # atomic: readers never see half a bundle
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return digest, rel

    def path(self, rel: str) -> Path:
        return self.root / rel

    def read(self, rel: str) -> bytes:
        try:
            return (self.root / rel).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"blob {rel} is missing") from None

    def job_dir(self, job_id: int) -> Path:
        return self.root / "jobs" / str(job_id)

    def artifact_path(self, job_id: int, rel: str) -> Path:
        """A file under the job's artifact folder; refuses paths that escape it."""
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise InvalidInput(f"bad artifact path {rel!r}")
        path = self.job_dir(job_id).joinpath(*pure.parts)
        if not path.is_file():
            raise NotFound(f"job {job_id} has no artifact {rel}")
        return path

    def list_artifacts(self, job_id: int) -> list[str]:
        base = self.job_dir(job_id)
        if not base.is_dir():
            return []
        return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
