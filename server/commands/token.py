"""`crosscheck token create|list|revoke`: API tokens (the secret is printed once)."""
from __future__ import annotations

import argparse
import sys

from server import db
from server.commands import locate
from server.config import get_settings
from server.errors import DomainError
from server.models.token import SCOPES
from server.services import tokens


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("token", help="create, list and revoke API tokens")
    actions = parser.add_subparsers(dest="token_action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a token and print its secret once")
    create.add_argument("name", help="who or what uses it, e.g. ci-nightly or worker-npu-1")
    create.add_argument("--scope", action="append", choices=SCOPES, required=True,
                        help="repeatable: read, submit (implies read), worker, admin (implies all)")
    listing = actions.add_parser("list", help="list tokens (never their secrets)")
    revoke = actions.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("id", type=int, help="the token's number, as `crosscheck token list` shows it")
    for action in (create, listing, revoke):
        locate.add_data_dir_argument(action)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    locate.use_data_dir(args)
    try:
        locate.open_database(get_settings())
    except locate.ServiceDataMissing as exc:
        print(locate.explain("token", exc), file=sys.stderr)
        return 2
    try:
        with db.session_scope() as session:
            if args.token_action == "create":
                token, secret = tokens.create(session, args.name, args.scope)
                print(f"token {token.id} {token.name!r} scopes: {token.scopes}")
                print(secret)
                print("store it now: the secret is not shown again", file=sys.stderr)
            elif args.token_action == "list":
                for t in tokens.list_tokens(session):
                    state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "active"
                    used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
                    print(f"{t.id:>4}  {t.name:<24} {t.prefix}…  {t.scopes:<24} {state:<24} last used {used}")
            else:
                token = tokens.revoke(session, args.id)
                print(f"token {token.id} {token.name!r} revoked")
    except DomainError as exc:
        print(f"crosscheck token: {exc.detail}", file=sys.stderr)
        return 1
    return 0
