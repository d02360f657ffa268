"""`crosscheck db upgrade|downgrade REV|current`: the schema, by Alembic migrations only;
`crosscheck db compact`: the retention of case results (docs/history.md)."""
from __future__ import annotations

import argparse
import sys

from server import db, migrate
from server.config import get_settings
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
    settings = get_settings()
    url = settings.resolved_database_url
    if settings.is_sqlite:
        settings.data_dir.mkdir(parents=True, exist_ok=True)  # the default SQLite file lives there
    engine = db.get_engine()
    if args.db_action == "compact":
        try:
            migrate.check_schema(engine, url)
        except migrate.SchemaOutdated as exc:
            print(f"crosscheck db compact: {exc}", file=sys.stderr)
            return 2
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


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
