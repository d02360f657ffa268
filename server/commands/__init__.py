"""`crosscheck` subcommands of the service (see server/cli.py)."""
