"""`arena login`: keep the API token for later commands."""

from __future__ import annotations

import argparse
import os
import sys

from evaluator.cli.client import token_path


def cmd_login(args: argparse.Namespace) -> int:
    """Stores an API token (from the portal's /accounts/token/ page) in token_path(), readable by you only."""
    token = (args.token or os.environ.get("ARENA_TOKEN", "")).strip()
    if not token:
        import getpass

        print(f"Paste your API token from {args.portal.rstrip('/')}/accounts/token/", file=sys.stderr)
        token = getpass.getpass("token: ").strip()
    if not token:
        print("arena login: no token given", file=sys.stderr)
        return 2
    path = token_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    print(f"token saved to {path} (mode 0600); arena submit uses it when neither --token nor ARENA_TOKEN is set")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("login", help="save your API token in ~/.config/arena/token (mode 0600) for arena submit")
    lg.add_argument("--portal", default="http://127.0.0.1:8000")
    lg.add_argument("--token", default=None, help="the token (default: $ARENA_TOKEN, else asked for)")
    lg.set_defaults(func=cmd_login)
