"""Where the admin commands (token, db, api, worker) find the service's data, and the error that says
where they looked and what to do when it is not there, in place of a database driver's traceback."""
from __future__ import annotations

import argparse
import os
import textwrap
from pathlib import Path

from server.config import Settings, get_settings

WHAT_TO_DO = ("Run this in the directory where `crosscheck up` was started, pass --data-dir DIR (the data dir "
              "`crosscheck up` printed), or set DATABASE_URL=postgresql://... for a production database.")
WIDTH = 79  # an 80-column terminal


class ServiceDataMissing(Exception):
    """The database (or the worker's token or broker) is not where the command looked."""


def explain(command: str, problem: object) -> str:
    """`crosscheck COMMAND: problem`, each line wrapped for a terminal, continuations indented."""
    lines = f"crosscheck {command}: {problem}".splitlines()
    return "\n".join(textwrap.fill(line.strip(), WIDTH, initial_indent="" if i == 0 else "  ",
                                    subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)
                      for i, line in enumerate(lines))


def add_data_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the data dir of `crosscheck up` (default: $DATA_DIR or ./crosscheck-data)")


def use_data_dir(args: argparse.Namespace) -> None:
    """--data-dir, when given, wins over DATA_DIR for this process and the ones it starts."""
    if getattr(args, "data_dir", None) is not None:
        from server import db

        os.environ["DATA_DIR"] = str(Path(args.data_dir).resolve())
        get_settings.cache_clear()
        db.reset_caches()


def data_dir_source(alternatives: str = "--data-dir, DATA_DIR or DATABASE_URL") -> str:
    """How the data dir was chosen, in words."""
    if os.environ.get("DATA_DIR") or os.environ.get("data_dir"):
        return "the data dir named by --data-dir or DATA_DIR"
    return f"the default data dir ./crosscheck-data: no {alternatives} was given"


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases or an in-memory one)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite") or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def check_database_exists(settings: Settings) -> None:
    """A SQLite database must exist already: opening a missing file would create an empty one."""
    path = sqlite_file(settings.resolved_database_url)
    if path is not None and not path.is_file():
        where = data_dir_source() if not settings.database_url else "the file DATABASE_URL names"
        raise ServiceDataMissing(f"no database at {path}\n(looked in {where}).\n{WHAT_TO_DO}")


def open_database(settings: Settings) -> None:
    """The database exists, answers and has this code's schema; ServiceDataMissing says what is wrong."""
    from sqlalchemy.exc import DBAPIError

    from server import db, migrate

    check_database_exists(settings)
    url = settings.resolved_database_url
    try:
        migrate.check_schema(db.get_engine(), url)
    except migrate.SchemaOutdated as exc:
        raise ServiceDataMissing(str(exc)) from None
    except DBAPIError as exc:
        raise unreachable(settings, exc) from None


def unreachable(settings: Settings, exc: Exception) -> ServiceDataMissing:
    """The database is there but does not answer (a server down, a file it cannot read)."""
    advice = "Check that DATABASE_URL is right and its server is running." if settings.database_url else WHAT_TO_DO
    reason = getattr(exc, "orig", None) or exc
    return ServiceDataMissing(f"cannot open the database {safe_url(settings.resolved_database_url)}: {reason}\n"
                              f"{advice}")


def safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
