"""The portal's HTTP client for the CLI: requests with the API token, following a submission, where the token is kept."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any



def request(url: str, token: str, data: bytes | None = None, content_type: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        raise SystemExit(f"arena: the portal refused the request ({exc.code}): {refusal(body)}")
    except urllib.error.URLError as exc:
        raise SystemExit(f"arena: cannot reach the portal at {url}: {exc.reason}")


def refusal(body: str) -> str:
    """The portal's refusal as lines a person reads: every message of ``errors``, or the raw body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:2000]
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, dict):
        return str(data.get("detail", body))[:2000] if isinstance(data, dict) else body[:2000]
    lines = [f"{field}: {m}" if field != "non_field_errors" else str(m)
             for field, messages in errors.items() for m in (messages if isinstance(messages, list) else [messages])]
    return "\n  " + "\n  ".join(lines)


def follow(url: str, token: str, done: Any, timeout_s: float, progress: Any = None) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        data = request(url, token)
        if progress is not None:
            progress(data)
        if done(data) or time.monotonic() > deadline:
            return data
        time.sleep(2)


def token_path() -> Path:
    """Where ``arena login`` keeps the API token: $XDG_CONFIG_HOME/arena/token (default ~/.config/arena/token)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "arena" / "token"


def resolve_token(given: str | None) -> str:
    """The token to send: --token, else $ARENA_TOKEN, else the one ``arena login`` stored. Empty when none."""
    if given:
        return given.strip()
    if os.environ.get("ARENA_TOKEN", "").strip():
        return os.environ["ARENA_TOKEN"].strip()
    try:
        return token_path().read_text(encoding="utf-8").strip()
    except OSError:
        return ""
