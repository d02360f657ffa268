"""`crosscheck db upgrade|downgrade REV|current`: the schema, by Alembic migrations only;
`crosscheck db compact`: the retention of case results (docs/history.md)."""
from __future__ import annotations

import argparse
import os
import sys

from sqlalchemy.exc import DBAPIError

from server import db, migrate
from server.commands import datadir, locate
from server.config import Settings, get_settings
from server.services import retention


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("db", help="migrate the database schema")
    actions = parser.add_subparsers(dest="db_action", required=True, metavar="ACTION")
    up = actions.add_parser("upgrade", help="upgrade to a revision (default: head)")
    up.add_argument("revision", nargs="?", default="head", help="the Alembic revision to reach (default: head)")
    down = actions.add_parser("downgrade", help="downgrade to a revision ('base' empties the database)")
    down.add_argument("revision", help="the Alembic revision to go back to (base: an empty schema)")
    actions.add_parser("current", help="show the database's revision and the code's")
    compact = actions.add_parser("compact", help="thin case results older than the retention (safe while serving)")
    compact.add_argument("--days", type=_at_least_one, default=None,
                         help="keep every result this many days (default: the retention_days setting)")
    compact.add_argument("--batch", type=_at_least_one, default=retention.BATCH, help="results per transaction")
    compact.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")
    for action in actions.choices.values():
        locate.add_data_dir_argument(action)
    parser.set_defaults(func=run)


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def run(args: argparse.Namespace) -> int:
    locate.use_data_dir(args)
    settings = get_settings()
    url = settings.resolved_database_url
    try:
        _check(args, settings)
    except locate.ServiceDataMissing as exc:
        print(locate.explain(f"db {args.db_action}", exc), file=sys.stderr)
        return 2
    engine = db.get_engine()
    if args.db_action == "compact":
        days = args.days or settings.retention_days
        done = retention.compact(db.get_sessionmaker(), days, batch=args.batch, dry_run=args.dry_run)
        print(("dry run, nothing changed: " if args.dry_run else "") + done.summary())
        return 0
    before = migrate.current_revision(engine)
    if args.db_action == "current":
        head = migrate.head_revision(url)
        state = "up to date" if before == head else "outdated: run `crosscheck db upgrade`"
        print(f"database {_safe(url)}: revision {before or 'none'}; code head {head} ({state})")
        return 0
    if args.db_action == "upgrade":
        migrate.upgrade(url, args.revision)
    else:
        migrate.downgrade(url, args.revision)
    after = migrate.current_revision(engine)
    print(f"database {_safe(url)}: {args.db_action} {before or 'none'} -> {after or 'none (base)'}")
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> None:
    """compact needs this code's schema; current and downgrade an existing database. upgrade creates
    the SQLite database, but only in a data dir named on purpose (--data-dir or DATA_DIR): one made
    by mistake in whatever directory the command ran would look like an empty service."""
    if args.db_action == "compact":
        locate.open_database(settings)
        return
    try:
        locate.check_database_exists(settings)
    except locate.ServiceDataMissing:
        named = bool(settings.database_url or os.environ.get("DATA_DIR") or os.environ.get("data_dir"))
        if args.db_action == "upgrade" and not named:
            raise locate.ServiceDataMissing(f"{sys.exc_info()[1]}\nTo make a new database here: crosscheck db upgrade "
                                            "--data-dir ./crosscheck-data") from None
        if args.db_action != "upgrade":
            raise
        target = locate.sqlite_file(settings.resolved_database_url)
        if settings.database_url and target is not None:  # a SQLite DATABASE_URL of the admin's choosing
            target.parent.mkdir(parents=True, exist_ok=True)
        else:
            datadir.make_private(settings.data_dir)  # 0700, and the database files 0600, as `crosscheck up` does
    try:
        migrate.current_revision(db.get_engine())
    except DBAPIError as exc:
        raise locate.unreachable(settings, exc) from None


_safe = locate.safe_url
