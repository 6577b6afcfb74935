"""`arena login`: check an API token against its portal, then keep both for later commands."""

from __future__ import annotations

import argparse
import os
import sys

from evaluator.cli.client import portal_path, resolve_portal, token_check, token_path


def _write_private(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.chmod(path, 0o600)


def _ask_token(portal: str) -> str:
    """The token typed at a terminal (not echoed), or the first line piped in (`arena login < token.txt`); empty
    when none comes (end of input, Ctrl-C), which the caller says plainly instead of a traceback."""
    print(f"Paste your API token from {portal}/accounts/token/", file=sys.stderr, flush=True)
    try:
        if sys.stdin is not None and sys.stdin.isatty():
            import getpass

            return getpass.getpass("token: ").strip()
        return (sys.stdin.readline() if sys.stdin is not None else "").strip()
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return ""


def cmd_login(args: argparse.Namespace) -> int:
    """Checks an API token (from the portal's /accounts/token/ page) against the portal and stores it in
    token_path(), readable by you only, with the portal beside it; a token the portal refuses is not stored."""
    portal = resolve_portal(args.portal)
    token = (args.token or os.environ.get("ARENA_TOKEN", "")).strip()
    if not token:
        token = _ask_token(portal)
    if not token:
        print(
            f"arena login: no token given; pass --token, set ARENA_TOKEN or paste it when asked (make one on "
            f"{portal}/accounts/token/)",
            file=sys.stderr,
        )
        return 2
    if not args.no_check:
        problem = token_check(portal, token)
        if problem is not None:
            hint = "" if "does not accept" in problem else " (pass --no-check to save it unchecked)"
            print(f"arena login: {problem}; the token was not saved{hint}", file=sys.stderr)
            return 1
    path = token_path()
    _write_private(path, token)
    _write_private(portal_path(), portal)
    checked = "unchecked" if args.no_check else f"accepted by {portal}"
    print(
        f"token {checked}, saved to {path} (mode 0600); arena submit and arena test use it, and {portal}, "
        f"when neither --token nor ARENA_TOKEN is set"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser(
        "login",
        help="check your API token against the portal and save it in "
        "~/.config/arena/token (mode 0600) for arena submit and arena test",
    )
    lg.add_argument(
        "--portal",
        default=None,
        help="the portal (default: $ARENA_PORTAL, else the one saved last, else http://127.0.0.1:8000)",
    )
    lg.add_argument("--token", default=None, help="the token (default: $ARENA_TOKEN, else asked for)")
    lg.add_argument("--no-check", action="store_true", help="save the token without asking the portal about it")
    lg.set_defaults(func=cmd_login)
