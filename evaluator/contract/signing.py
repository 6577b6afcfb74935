"""Replies from workers are signed: HMAC-SHA256 over the reply's kind, the row it is about, the job that was issued
for it, the nonce the portal bound to that job at enqueue, and the reply's body (a result document, a check report,
the "running" facts). The web side records a reply only when the signature is right and the job id and nonce are the
row's current ones; anything else is refused and logged.

A worker holds its key in the process only (``ARENA_WORKER_KEY``, taken out of the environment when the worker
starts, so neither the judge's processes nor the sandboxed ranks inherit it). The web side holds the keys of the
workers it trusts by id (settings ``ARENA_WORKER_KEYS``); a signature names the key id that made it.

Each key the portal holds carries its roles: ``evaluations`` (a profile's evaluations, ranked and test mode) may sign
"running" and results, ``checks`` (problem proposals' checks) may sign "checking" and check reports. A key signs only
the replies of its roles, so a check host's key, which contributors' code runs beside, cannot sign a verdict."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any, Mapping, MutableMapping, NamedTuple

from evaluator.contract import jobs

VERSION = "v1"
KEY_ENV = "ARENA_WORKER_KEY"
KEY_ID_ENV = "ARENA_WORKER_KEY_ID"
DEFAULT_KEY_ID = "default"
KEY_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")

# role -> the reply kinds a key of that role may sign
ROLES: dict[str, frozenset[str]] = {
    "evaluations": frozenset({jobs.MARK_RUNNING, jobs.RECORD_RESULT, jobs.TEST_MARK_RUNNING, jobs.TEST_RECORD_RESULT}),
    "checks": frozenset({jobs.MARK_CHECKING, jobs.RECORD_CHECK}),
}

_held: tuple[str, bytes] | None = None


class WorkerKey(NamedTuple):
    """A key the portal holds: its secret and its roles (None: every role, for a key written without one)."""

    secret: str
    roles: frozenset[str] | None


def may_sign(roles: frozenset[str] | None, kind: str) -> bool:
    if roles is None:
        return True
    return any(kind in ROLES.get(role, ()) for role in roles)


class SignatureError(ValueError):
    """A reply that is not signed by a key the portal holds, for exactly this row, job and nonce."""


def canonical(value: Any) -> bytes:
    """The bytes a signature covers: JSON as it arrives through the queue (tuples are lists, keys are strings),
    sorted keys, no spaces."""
    plain = json.loads(json.dumps(value))
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def message(kind: str, row_id: int, job_id: str, nonce: str, body: Any) -> bytes:
    return canonical({"v": VERSION, "kind": kind, "id": row_id, "job_id": job_id, "nonce": nonce, "body": body})


def hold_key(environ: MutableMapping[str, str] | None = None) -> tuple[str, bytes] | None:
    """Moves the worker's key from the environment into this process (once); later calls return what it holds.
    Children started after this (the judge, the sandbox) never see it."""
    global _held
    env: MutableMapping[str, str] = os.environ if environ is None else environ
    raw = env.pop(KEY_ENV, "")
    key_id = env.pop(KEY_ID_ENV, "") or DEFAULT_KEY_ID
    if raw:
        _held = (key_id, raw.encode("utf-8"))
    return _held


def sign(kind: str, row_id: int, job_id: str, nonce: str, body: Any, key: tuple[str, bytes] | None = None) -> str:
    """``v1:<key id>:<hex HMAC>``; raises SignatureError when this process holds no key."""
    key = key or hold_key()
    if key is None:
        raise SignatureError(
            f"this worker holds no signing key; set {KEY_ENV} in the worker's environment (the "
            f"portal holds the same key in ARENA_WORKER_KEYS)"
        )
    key_id, secret = key
    digest = hmac.new(secret, message(kind, row_id, job_id, nonce, body), hashlib.sha256).hexdigest()
    return f"{VERSION}:{key_id}:{digest}"


def verify(
    signature: Any,
    kind: str,
    row_id: int,
    job_id: str,
    nonce: str,
    body: Any,
    keys: Mapping[str, WorkerKey | str | bytes],
) -> str:
    """The key id that made ``signature``; raises SignatureError saying why it is refused (also when the key's roles
    do not include ``kind``). A plain string or bytes value is a key of every role."""
    if not isinstance(signature, str) or signature.count(":") != 2:
        raise SignatureError("the reply carries no signature")
    version, key_id, digest = signature.split(":")
    if version != VERSION:
        raise SignatureError(f"signature version {version[:10]!r} is not {VERSION}")
    held = keys.get(key_id)
    secret, roles = (held.secret, held.roles) if isinstance(held, WorkerKey) else (held, None)
    if not secret:
        raise SignatureError(f"signed with key {key_id[:40]!r}, which the portal does not hold")
    if not may_sign(roles, kind):
        raise SignatureError(
            f"key {key_id!r} has the role {'+'.join(sorted(roles or ()))}, which may not sign {kind.rsplit('.', 1)[-1]}"
        )
    secret = secret.encode("utf-8") if isinstance(secret, str) else secret
    try:
        expected = hmac.new(secret, message(kind, row_id, job_id, nonce, body), hashlib.sha256).hexdigest()
    except (TypeError, ValueError) as exc:
        raise SignatureError(f"the reply's body is not JSON ({exc})") from None
    if not hmac.compare_digest(expected, digest):
        raise SignatureError(f"the signature does not match (key {key_id!r})")
    return key_id


def parse_keys(raw: str) -> dict[str, WorkerKey]:
    """``id:role=key,id2:role+role=key2`` as settings reads ``ARENA_WORKER_KEYS`` (roles from ``ROLES``). Without a
    role (``id=key``, or a bare ``key`` for the default id) a key has every role; production settings refuse that."""
    keys: dict[str, WorkerKey] = {}
    for item in (raw or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, secret = item.partition("=")
        if not sep:
            name, secret = DEFAULT_KEY_ID, item
        key_id, colon, role_list = (part.strip() for part in name.partition(":"))
        if not key_id or not set(key_id) <= KEY_ID_CHARS or not secret.strip():
            raise ValueError(
                f"ARENA_WORKER_KEYS: {key_id[:40]!r} is not id:role=key with an id of letters, digits, _-."
            )
        roles = None
        if colon:
            roles = frozenset(r.strip() for r in role_list.split("+"))
            unknown = sorted(roles - set(ROLES))
            if unknown or not roles:
                raise ValueError(
                    f"ARENA_WORKER_KEYS: key {key_id!r} names role {'+'.join(unknown)[:40]!r}; the roles "
                    f"are {', '.join(ROLES)} (id:role=key, several joined by +)"
                )
        keys[key_id] = WorkerKey(secret.strip(), roles)
    return keys
