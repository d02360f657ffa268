"""`crosscheck db`, `crosscheck token` and `crosscheck api` against a real SQLite file."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from server import db
from server.cli import main
from server.config import Settings, get_settings
from server.main import create_app


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """Run `crosscheck ...` in-process with DATA_DIR set to a temp folder (its own SQLite file)."""
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    for name in ("DATABASE_URL", "BROKER_URL", "BLOB_DIR"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    db.reset_caches()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    umask = os.umask(0o022)
    os.umask(umask)
    yield run
    os.umask(umask)  # `crosscheck api` sets the service's private umask for its process
    db.reset_caches()
    get_settings.cache_clear()


def test_db_upgrade_current_downgrade(cli):
    from server.migrate import head_revision

    head = head_revision("sqlite://")
    code, _, err = cli("db", "current")
    assert code == 2 and "no database at" in err  # and none made: tests/server/test_cli_missing_data.py
    code, out, _ = cli("db", "upgrade")  # DATA_DIR names the data dir: upgrade makes the database
    assert code == 0 and f"upgrade none -> {head}" in out
    code, out, _ = cli("db", "current")
    assert code == 0 and f"revision {head}" in out and "up to date" in out
    code, out, _ = cli("db", "downgrade", "base")
    assert code == 0 and f"downgrade {head} -> none (base)" in out
    code, out, _ = cli("db", "current")
    assert code == 0 and "revision none" in out and "outdated" in out


def test_api_refuses_an_outdated_schema(cli, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "crosscheck.db").touch()  # as `crosscheck up` makes it, before migrating
    code, _, err = cli("api", "--port", "1")
    assert code == 1
    assert "crosscheck db upgrade" in err and "empty database" in err


def test_token_create_list_revoke(cli, tmp_path):
    cli("db", "upgrade")
    code, out, err = cli("token", "create", "ci-nightly", "--scope", "submit", "--scope", "read")
    assert code == 0 and "not shown again" in err
    header, secret = out.strip().splitlines()
    assert header == "token 1 'ci-nightly' scopes: read submit" and secret.startswith("cc_")

    app = create_app(Settings(data_dir=tmp_path / "data"), start_sweeper=False)
    with TestClient(app) as client:
        assert client.get("/api/v1/operators", headers={"X-API-Token": secret}).status_code == 200
        code, out, _ = cli("token", "list")
        assert code == 0 and "ci-nightly" in out and "active" in out and secret not in out
        assert cli("token", "revoke", "1")[1].strip() == "token 1 'ci-nightly' revoked"
        assert client.get("/api/v1/operators", headers={"X-API-Token": secret}).status_code == 401
    app.state.engine.dispose()
    assert "revoked" in cli("token", "list")[1]


def test_token_errors(cli):
    cli("db", "upgrade")
    code, _, err = cli("token", "revoke", "42")
    assert code == 1 and "no token 42" in err
    with pytest.raises(SystemExit):
        cli("token", "create", "x", "--scope", "root")
