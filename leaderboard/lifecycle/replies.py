"""A worker's reply, one shape for every kind: RQ jobs on the ``web`` queue (named in ``evaluator.contract.jobs``) take
ids and plain data, check the worker's signature (``signatures.verified``: for exactly the row, the job and the
nonce bound to that job) and call one service of their kind, nothing more. A reply that fails the check is refused and
logged (logger ``arena.replies``) and changes nothing.

Database connections are checked before and closed after each reply, so a worker that lives through a database outage
(a SimpleWorker, which does not fork) does not keep using a dead connection. If the database is unreachable the job
fails and RQ runs it again later; the services are idempotent, so a retried reply never counts twice.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from django.db import connections

from leaderboard.lifecycle.signatures import verified


def close_stale_connections() -> None:
    """What Django does around each request: drop connections that broke or outlived CONN_MAX_AGE. A connection
    inside a transaction (a test running jobs in-process) is left alone."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


@contextmanager
def job_database() -> Iterator[None]:
    """Around every job of the web worker: stale connections dropped before and after."""
    close_stale_connections()
    try:
        yield
    finally:
        close_stale_connections()


def reply(
    kind: str, row_id: Any, job_id: Any, nonce: Any, body: Any, signature: Any, store: Callable[[], object]
) -> None:
    """Calls ``store`` (the kind's service) when the reply ``kind`` is signed for ``row_id``, ``job_id`` and its
    nonce over ``body``; otherwise logs why it is refused and stores nothing."""
    if not verified(kind, row_id, job_id, nonce, body, signature):
        return
    with job_database():
        store()
