"""The web side's half of signed replies (``evaluator/contract/signing.py``): the nonce bound to each job at enqueue,
and the check that a reply was signed by a worker key the portal holds, for exactly the row, job and nonce it names.

The nonce is derived, not stored: an HMAC under the portal's SECRET_KEY of the job id, which is itself new for every
attempt (``submission-<id>-<attempt>``, ``proposal-<id>-<check>``). Nobody without SECRET_KEY can tell the nonce of a
job from its id, and the row's current job id decides which attempt may still report."""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from django.conf import settings

from evaluator.contract import signing

logger = logging.getLogger("arena.replies")


def nonce_for(job_id: str) -> str:
    return hmac.new(
        settings.SECRET_KEY.encode("utf-8"), f"arena-job-nonce:{job_id}".encode("utf-8"), hashlib.sha256
    ).hexdigest()[:32]


def verified(kind: str, row_id: Any, job_id: Any, nonce: Any, body: Any, signature: Any) -> bool:
    """True when the reply may be recorded; otherwise logs why it is refused and returns False."""
    if (
        not isinstance(job_id, str)
        or not job_id
        or not isinstance(nonce, str)
        or not hmac.compare_digest(nonce.encode("utf-8"), nonce_for(job_id).encode("utf-8"))
    ):
        logger.error("refused %s for #%s: job %r was not issued with that nonce", kind, row_id, job_id)
        return False
    try:
        key_id = signing.verify(signature, kind, row_id, job_id, nonce, body, settings.ARENA_WORKER_KEYS)
    except signing.SignatureError as exc:
        logger.error("refused %s for #%s (job %s): %s", kind, row_id, job_id, exc)
        return False
    logger.debug("%s for #%s (job %s) signed by key %s", kind, row_id, job_id, key_id)
    return True


def signed_envelope(kind: str, row_id: int, value: Any, body_key: str) -> Any:
    """The body of a finished job's return value (a signed result or report, as the reaper finds it), or None when it
    is not signed for this row, its job and nonce."""
    if not isinstance(value, dict):
        return None
    body = value.get(body_key)
    if verified(kind, row_id, value.get("job_id"), value.get("nonce"), body, value.get("signature")):
        return body
    return None
