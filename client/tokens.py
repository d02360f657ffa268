"""The tokens `crosscheck up` saved in its data dir, as the client commands find them
(`crosscheck up` writes them: server/commands/datadir.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from jobqueue import DEFAULT_DATA_DIR

TOKENS_FILE = "tokens.json"


def data_dir_from_env(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("DATA_DIR") or env.get("data_dir") or DEFAULT_DATA_DIR)


def read_tokens(data_dir: Path) -> dict[str, str]:
    """The secrets `crosscheck up` stored ({"admin": ..., "worker": ...}); {} when there are none."""
    try:
        data = json.loads((Path(data_dir) / TOKENS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


# Where `submit`, `ci run` and `upload` take their token from, in order (their --help says the same).
SOURCES = ("--token, else $CROSSCHECK_TOKEN, else the admin token in $DATA_DIR/tokens.json "
           "(default ./crosscheck-data/tokens.json), which `crosscheck up --data-dir D` writes to D/tokens.json")


def refused_hint(env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """What to do after a 401/403: where the token came from, and where `crosscheck up` put one."""
    where = Path(data_dir_from_env(env)) / TOKENS_FILE
    found = "found" if read_tokens(where.parent).get("admin") else "none there"
    return (f"the token is taken from {SOURCES}; here that file is {where} ({found}): after "
            "`crosscheck up --data-dir D`, run with DATA_DIR=D or pass --token with D/tokens.json's \"admin\"")
