"""Run and check Alembic migrations (`crosscheck db upgrade|downgrade|current`)."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

import migrations

MIGRATIONS_DIR = Path(migrations.__file__).parent


class SchemaOutdated(RuntimeError):
    """The database is not at the code's schema revision."""


def alembic_config(url: str) -> Config:
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")  # without it Alembic warns (an error under our pytest config)
    cfg.set_main_option("version_locations", str(MIGRATIONS_DIR / "versions"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def head_revision(url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def check_schema(engine: Engine, url: str) -> None:
    """Refuse to run on an outdated schema, saying what to run."""
    current, head = current_revision(engine), head_revision(url)
    if current != head:
        raise SchemaOutdated(
            f"the database schema is at revision {current or 'none (empty database)'}, this code needs {head}: "
            "run `crosscheck db upgrade`"
        )
