"""The schema: migrations up and down on both databases, and refusing to run on an outdated one."""
from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from server import migrate
from server.config import Settings
from server.main import create_app
from server.models import Base

TABLES = {t.name for t in Base.metadata.sorted_tables}


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _up_down_up(url: str) -> None:
    migrate.upgrade(url)
    assert _tables(url) == TABLES
    engine = sa.create_engine(url)
    try:
        assert migrate.current_revision(engine) == migrate.head_revision(url)
        migrate.downgrade(url, "base")
        assert _tables(url) == set() and migrate.current_revision(engine) is None
        migrate.upgrade(url)
        assert _tables(url) == TABLES
        migrate.check_schema(engine, url)  # no complaint at head
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_migrations_up_down_up_on_postgres(pg_fresh_schema):
    _up_down_up(Settings(database_url=pg_fresh_schema.url).resolved_database_url)


def test_migrations_up_down_up_on_sqlite(tmp_path: Path):
    _up_down_up(f"sqlite:///{tmp_path / 'fresh.db'}")


def test_models_match_the_migrations(sqlite_url):
    """Alembic's autogenerate finds nothing to add: the models are what the migrations build."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = sa.create_engine(sqlite_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": False}), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_the_app_refuses_an_empty_database(tmp_path: Path):
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'empty.db'}")
    app = create_app(settings, start_sweeper=False)
    with pytest.raises(migrate.SchemaOutdated, match=r"revision none \(empty database\).*crosscheck db upgrade"):
        with TestClient(app):
            pass
    app.state.engine.dispose()


def test_the_app_refuses_an_old_schema(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # a database from some other (older or newer) code
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0000'"))
    engine.dispose()
    app = create_app(Settings(data_dir=tmp_path, database_url=url), start_sweeper=False)
    with pytest.raises(migrate.SchemaOutdated, match="revision 0000, this code needs"):
        with TestClient(app):
            pass
    app.state.engine.dispose()
