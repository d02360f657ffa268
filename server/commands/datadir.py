"""The local data dir of `crosscheck up` (and the commands that find it): where it is, the tokens
saved in it, and its permissions."""
from __future__ import annotations

import json
import os
from pathlib import Path

# Where the data dir is and how its tokens are read: shared with the client (client/tokens.py).
from client.tokens import TOKENS_FILE, data_dir_from_env, read_tokens  # noqa: F401

PRIVATE_UMASK = 0o077  # what the service writes in its data dir: readable by its own user only
DATA_FILES = ("crosscheck.db", "broker.db")


def write_tokens(data_dir: Path, tokens: dict[str, str]) -> Path:
    """Write the secrets readable by this user only (0600, also when the file already existed)."""
    path = Path(data_dir) / TOKENS_FILE
    tmp = path.with_name(TOKENS_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(tokens, f, indent=2)
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path


def make_private(data_dir: Path) -> Path:
    """The data dir 0700 and everything in it 0700 (folders) or 0600 (files), links left alone.

    Jobs run code that strangers upload (docs/SECURITY.md): the database, the broker, bundles and
    tokens must not be readable by any other uid, including the sandboxed job's. The database
    files are created here, empty, so that SQLite's own files (-wal, -shm) inherit 0600 too.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in DATA_FILES:
        os.close(os.open(data_dir / name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    for root, dirs, files in os.walk(data_dir):
        os.chmod(root, 0o700, follow_symlinks=False)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o600, follow_symlinks=False)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return data_dir
