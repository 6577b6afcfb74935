"""The portal's HTTP client for the CLI: requests with the API token, following a submission, where the token and
the portal it belongs to are kept, checking a token against its portal, and whether any worker serves a profile."""

from __future__ import annotations

import http.client
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
        raise SystemExit(f"arena: the portal refused the request ({exc.code}): {refusal(body)}") from None
    except urllib.error.URLError as exc:
        raise SystemExit(f"arena: cannot reach the portal at {url}: {exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:  # the connection reset or closed mid-answer (a restart)
        raise SystemExit(
            f"arena: the portal at {url} closed the connection before answering ({exc!r}); try again"
        ) from None


def refusal(body: str) -> str:
    """The portal's refusal as lines a person reads: every message of ``errors``, or the raw body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:2000]
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, dict):
        return str(data.get("detail", body))[:2000] if isinstance(data, dict) else body[:2000]
    lines = [
        f"{field}: {m}" if field != "non_field_errors" else str(m)
        for field, messages in errors.items()
        for m in (messages if isinstance(messages, list) else [messages])
    ]
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


DEFAULT_PORTAL = "http://127.0.0.1:8000"
START_WORKER = (
    "rq worker --worker-class evaluator.host.worker.ArenaWorker --serializer rq.serializers.JSONSerializer "
    "--url $REDIS_URL --path . {profile}-test {profile}"
)


def portal_path() -> Path:
    """Where ``arena login`` keeps the portal its token belongs to (next to the token)."""
    return token_path().with_name("portal")


def resolve_portal(given: str | None) -> str:
    """The portal to talk to: --portal, else $ARENA_PORTAL, else the one ``arena login`` saved, else the local one."""
    if given:
        return given.rstrip("/")
    if os.environ.get("ARENA_PORTAL", "").strip():
        return os.environ["ARENA_PORTAL"].strip().rstrip("/")
    try:
        saved = portal_path().read_text(encoding="utf-8").strip()
    except OSError:
        saved = ""
    return (saved or DEFAULT_PORTAL).rstrip("/")


def token_check(portal: str, token: str) -> str | None:
    """None when the portal accepts ``token``; otherwise why not, in a sentence (refused, or not reachable)."""
    req = urllib.request.Request(
        f"{portal}/api/tests/", headers={"Authorization": f"Token {token}", "Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
        return None
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            why = refusal(exc.read().decode(errors="replace")).strip()
            return (
                f"{portal} does not accept this token ({exc.code}: {why}); copy it again from {portal}/accounts/token/"
            )
        return f"{portal} answered {exc.code} when checking the token"
    except (urllib.error.URLError, OSError) as exc:
        return f"cannot reach the portal at {portal} ({getattr(exc, 'reason', exc)})"


def live_workers(portal: str, profile: str) -> int | None:
    """How many live workers serve ``profile`` on the portal now (``/queues/?format=json``); None when the portal
    does not say (no Redis there, an older portal, not reachable): then nothing is claimed either way."""
    try:
        with urllib.request.urlopen(f"{portal}/queues/?format=json", timeout=15) as resp:
            data = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    for row in (data.get("queues") or []) if isinstance(data, dict) else []:
        if isinstance(row, dict) and row.get("profile") == profile and isinstance(row.get("live_workers"), int):
            return row["live_workers"]
    return None


def unserved_notice(
    portal: str, profile: str, what: str, on_cpu: str = "try it on CPU with --hardware cpu-gloo-2"
) -> str:
    """What to say when no worker serves ``profile``: the ``what`` waits queued, how to start a worker, and
    ``on_cpu``: how to try it on a CPU profile instead (a model run names its hardware in its manifest)."""
    return (
        f"arena: no worker serves {profile} on {portal} now: the {what} waits in its queue until one starts. "
        f"On a host with that hardware start one with\n  {START_WORKER.format(profile=profile)}\n"
        f'(README, "Deploy workers on GPU hosts"), or {on_cpu}. '
        f"{portal}/queues/ shows which profiles are served."
    )


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
