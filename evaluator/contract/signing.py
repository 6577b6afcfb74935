"""Replies from workers are signed: HMAC-SHA256 over the reply's kind, the row it is about, the job that was issued
for it, the nonce the portal bound to that job at enqueue, and the reply's body (a result document, a check report,
the "running" facts). The web side records a reply only when the signature is right and the job id and nonce are the
row's current ones; anything else is refused and logged.

A worker holds its key in the process only (``ARENA_WORKER_KEY``, taken out of the environment when the worker
starts, so neither the judge's processes nor the sandboxed ranks inherit it). The web side holds the keys of the
workers it trusts by id (settings ``ARENA_WORKER_KEYS``); a signature names the key id that made it."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any, Mapping

VERSION = "v1"
KEY_ENV = "ARENA_WORKER_KEY"
KEY_ID_ENV = "ARENA_WORKER_KEY_ID"
DEFAULT_KEY_ID = "default"
KEY_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")

_held: tuple[str, bytes] | None = None


class SignatureError(ValueError):
    """A reply that is not signed by a key the portal holds, for exactly this row, job and nonce."""


def canonical(value: Any) -> bytes:
    """The bytes a signature covers: JSON as it arrives through the queue (tuples are lists, keys are strings),
    sorted keys, no spaces."""
    plain = json.loads(json.dumps(value))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def message(kind: str, row_id: int, job_id: str, nonce: str, body: Any) -> bytes:
    return canonical({"v": VERSION, "kind": kind, "id": row_id, "job_id": job_id, "nonce": nonce, "body": body})


def hold_key(environ: dict[str, str] | None = None) -> tuple[str, bytes] | None:
    """Moves the worker's key from the environment into this process (once); later calls return what it holds.
    Children started after this (the judge, the sandbox) never see it."""
    global _held
    environ = os.environ if environ is None else environ
    raw = environ.pop(KEY_ENV, "")
    key_id = environ.pop(KEY_ID_ENV, "") or DEFAULT_KEY_ID
    if raw:
        _held = (key_id, raw.encode("utf-8"))
    return _held


def sign(kind: str, row_id: int, job_id: str, nonce: str, body: Any,
         key: tuple[str, bytes] | None = None) -> str:
    """``v1:<key id>:<hex HMAC>``; raises SignatureError when this process holds no key."""
    key = key or hold_key()
    if key is None:
        raise SignatureError(f"this worker holds no signing key; set {KEY_ENV} in the worker's environment (the "
                             f"portal holds the same key in ARENA_WORKER_KEYS)")
    key_id, secret = key
    digest = hmac.new(secret, message(kind, row_id, job_id, nonce, body), hashlib.sha256).hexdigest()
    return f"{VERSION}:{key_id}:{digest}"


def verify(signature: Any, kind: str, row_id: int, job_id: str, nonce: str, body: Any,
           keys: Mapping[str, str | bytes]) -> str:
    """The key id that made ``signature``; raises SignatureError saying why it is refused."""
    if not isinstance(signature, str) or signature.count(":") != 2:
        raise SignatureError("the reply carries no signature")
    version, key_id, digest = signature.split(":")
    if version != VERSION:
        raise SignatureError(f"signature version {version[:10]!r} is not {VERSION}")
    secret = keys.get(key_id)
    if not secret:
        raise SignatureError(f"signed with key {key_id[:40]!r}, which the portal does not hold")
    secret = secret.encode("utf-8") if isinstance(secret, str) else secret
    try:
        expected = hmac.new(secret, message(kind, row_id, job_id, nonce, body), hashlib.sha256).hexdigest()
    except (TypeError, ValueError) as exc:
        raise SignatureError(f"the reply's body is not JSON ({exc})") from None
    if not hmac.compare_digest(expected, digest):
        raise SignatureError(f"the signature does not match (key {key_id!r})")
    return key_id


def parse_keys(raw: str) -> dict[str, str]:
    """``id=key,id2=key2`` (a bare ``key`` is the default id), as settings reads ``ARENA_WORKER_KEYS``."""
    keys: dict[str, str] = {}
    for item in (raw or "").split(","):
        item = item.strip()
        if not item:
            continue
        key_id, sep, secret = item.partition("=")
        if not sep:
            key_id, secret = DEFAULT_KEY_ID, item
        key_id = key_id.strip()
        if not key_id or not set(key_id) <= KEY_ID_CHARS or not secret.strip():
            raise ValueError(f"ARENA_WORKER_KEYS: {key_id[:40]!r} is not id=key with an id of letters, digits, _-.")
        keys[key_id] = secret.strip()
    return keys
