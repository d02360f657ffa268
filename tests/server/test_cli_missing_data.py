"""The admin commands, run as the installed console script from a directory without a data dir, say
where they looked and what to do, instead of a database driver's traceback (server/commands/locate.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import clean_env, free_port

CROSSCHECK = str(Path(sys.executable).parent / "crosscheck")
ADVICE = ("`crosscheck up`", "--data-dir", "DATABASE_URL")


def crosscheck(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CROSSCHECK, *argv], cwd=cwd, env=clean_env(**env), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def assert_explained(done: subprocess.CompletedProcess[str], *wanted: str) -> None:
    err = done.stderr
    assert done.returncode != 0, (done.stdout, err)
    assert "Traceback" not in err and "sqlalchemy" not in err.lower(), err
    assert all(w in " ".join(err.split()) for w in wanted), err  # words may wrap across lines
    too_wide = [line for line in err.splitlines() if len(line) > 80 and len(line.split()) > 1]
    assert not too_wide, err  # an 80-column terminal; only a path longer than a line may pass it


@pytest.mark.parametrize("argv", [
    ("token", "create", "ci", "--scope", "read"),
    ("token", "list"),
    ("token", "revoke", "1"),
    ("db", "current"),
    ("db", "upgrade"),
    ("db", "downgrade", "base"),
    ("db", "compact"),
    ("api", "--port", "0"),
], ids=" ".join)
def test_database_commands_say_where_they_looked(tmp_path: Path, argv: tuple[str, ...]) -> None:
    done = crosscheck(tmp_path, *argv)
    assert_explained(done, f"no database at {tmp_path}/crosscheck-data/crosscheck.db", "./crosscheck-data", *ADVICE)
    assert list(tmp_path.iterdir()) == [], "a failed command created files where it ran"


def test_worker_says_where_it_looked_for_its_token_and_broker(tmp_path: Path) -> None:
    done = crosscheck(tmp_path, "worker")
    assert_explained(done, f"no {tmp_path}/crosscheck-data/tokens.json", "WORKER_TOKEN", "`crosscheck up`",
                     "--data-dir")
    done = crosscheck(tmp_path, "worker", "--data-dir", "elsewhere", WORKER_TOKEN="cc_x")
    assert_explained(done, "BROKER_URL is unset", f"{tmp_path}/elsewhere", "named by --data-dir")
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path) -> None:
    url = f"postgresql://someone:s3cret@127.0.0.1:{free_port()}/nothing"
    done = crosscheck(tmp_path, "token", "list", DATABASE_URL=url)
    assert_explained(done, "cannot open the database", "127.0.0.1", "DATABASE_URL is right")
    assert "s3cret" not in done.stderr


def test_data_dir_made_on_purpose_then_used_from_anywhere(tmp_path: Path) -> None:
    """`db upgrade --data-dir` makes the database; the other commands find it with --data-dir or DATA_DIR."""
    data = tmp_path / "service"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = crosscheck(elsewhere, "db", "upgrade", "--data-dir", str(data))
    assert done.returncode == 0 and (data / "crosscheck.db").is_file(), done.stderr
    assert oct(os.stat(data).st_mode & 0o777) == "0o700"  # private, as `crosscheck up` makes it
    assert oct(os.stat(data / "crosscheck.db").st_mode & 0o777) == "0o600"
    done = crosscheck(elsewhere, "token", "create", "ci", "--scope", "read", "--data-dir", str(data))
    assert done.returncode == 0 and done.stdout.splitlines()[1].startswith("cc_"), done.stderr
    done = crosscheck(elsewhere, "token", "list", DATA_DIR=str(data))
    assert done.returncode == 0 and "ci" in done.stdout, done.stderr
    assert list(elsewhere.iterdir()) == []
