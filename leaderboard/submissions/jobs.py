"""RQ jobs on the "web" queue, named in ``evaluator.contract.jobs`` (``MARK_RUNNING``, ``RECORD_RESULT``). Workers
of every hardware profile send these; they carry ids and plain data and call a service, nothing more. Run them
with ``python manage.py rqworker web --with-scheduler`` (settings' ``RQ["WORKER_CLASS"]``, ``evaluator.host.worker``,
runs only these allow-listed jobs, JSON only).

Every reply is a lifecycle reply (``leaderboard.lifecycle.replies.reply``): signed by the worker that ran the job over
the submission, the job id and the nonce bound to that job at enqueue, and its body; refused and logged otherwise.
If the database is unreachable the job fails, and RQ runs it again later (the worker enqueues these replies with
``Retry``; the scheduler, ``--with-scheduler``, puts a retried job back on the queue when its interval has passed).
Both services are idempotent, so a retried reply can never count twice.
"""

from __future__ import annotations

from typing import Any

from evaluator.contract.jobs import MARK_RUNNING, RECORD_RESULT
from leaderboard.lifecycle.replies import job_database, reply
from leaderboard.submissions import results, services

__all__ = ["job_database", "mark_running", "record_result"]  # job_database: the web worker's other jobs use it too


def mark_running(
    submission_id: int, worker_name: str, started_at_epoch: float, job_id: str, nonce: str, signature: str
) -> None:
    reply(
        MARK_RUNNING,
        submission_id,
        job_id,
        nonce,
        {"worker": worker_name, "started": started_at_epoch},
        signature,
        lambda: services.submission_mark_running(
            submission_id=submission_id, worker=worker_name, started_at=started_at_epoch, job_id=job_id
        ),
    )


def record_result(submission_id: int, document: dict[str, Any], job_id: str, nonce: str, signature: str) -> None:
    reply(
        RECORD_RESULT,
        submission_id,
        job_id,
        nonce,
        document,
        signature,
        lambda: results.result_record(submission_id=submission_id, document=document, job_id=job_id, current_only=True),
    )
