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
