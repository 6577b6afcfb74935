"""RQ jobs on the "web" queue, named in ``evaluator.contract.jobs`` (``MARK_RUNNING``, ``RECORD_RESULT``). Workers
of every hardware profile send these; they carry ids and plain data and call a service, nothing more. Run them
with ``python manage.py rqworker web --with-scheduler`` (settings' ``RQ["WORKER_CLASS"]``, ``evaluator.worker``,
runs only these allow-listed jobs, JSON only).

Every reply is signed by the worker that ran the job (``evaluator/contract/signing.py``) over the submission, the job
id and the nonce bound to that job at enqueue (``signatures.nonce_for``), and its body. A reply with a wrong
signature, an unknown key, a nonce that was never issued for its job, or for a job that is not the row's current
one is refused and logged (logger ``arena.replies``) and changes nothing.

If the database is unreachable the job fails, and RQ runs it again later (the worker enqueues these replies with
``Retry``; the scheduler, ``--with-scheduler``, puts a retried job back on the queue when its interval has passed).
Both services are idempotent, so a retried reply can never count twice. Database connections are checked before
and closed after each job, so a worker that lives through a database outage (a SimpleWorker, which does not fork)
does not keep using a dead connection.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from django.db import connections

from evaluator.contract.jobs import MARK_RUNNING, RECORD_RESULT
from leaderboard.submissions import results, services
from leaderboard.submissions.signatures import verified


def close_stale_connections() -> None:
    """What Django does around each request: drop connections that broke or outlived CONN_MAX_AGE. A connection
    inside a transaction (a test running jobs in-process) is left alone."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


@contextmanager
def job_database() -> Iterator[None]:
    """Around every reply job (this module's and test mode's): stale connections dropped before and after."""
    close_stale_connections()
    try:
        yield
    finally:
        close_stale_connections()


def mark_running(submission_id: int, worker_name: str, started_at_epoch: float, job_id: str, nonce: str,
                 signature: str) -> None:
    if not verified(MARK_RUNNING, submission_id, job_id, nonce, {"worker": worker_name, "started": started_at_epoch},
                    signature):
        return
    with job_database():
        services.submission_mark_running(submission_id=submission_id, worker=worker_name,
                                         started_at=started_at_epoch, job_id=job_id)


def record_result(submission_id: int, document: dict[str, Any], job_id: str, nonce: str, signature: str) -> None:
    if not verified(RECORD_RESULT, submission_id, job_id, nonce, document, signature):
        return
    with job_database():
        results.result_record(submission_id=submission_id, document=document, job_id=job_id, current_only=True)
