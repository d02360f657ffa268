"""Alembic environment: the URL comes from the app settings unless the caller set one."""
from alembic import context
from sqlalchemy import engine_from_config, pool

from server.models import Base

config = context.config
if not config.get_main_option("sqlalchemy.url"):
    from server.config import get_settings

    config.set_main_option("sqlalchemy.url", get_settings().resolved_database_url)


def run_migrations() -> None:
    connectable = config.attributes.get("connection")
    if connectable is None:
        connectable = engine_from_config(config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
                                         poolclass=pool.NullPool)
        with connectable.connect() as connection:
            _run(connection)
    else:
        _run(connectable)


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=Base.metadata,
                      render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
