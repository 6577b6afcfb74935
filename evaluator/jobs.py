"""RQ job functions that GPU (and CPU) workers run. They never touch the database: a worker reports back by
enqueueing a job on the web side's queue, which stores the result. Hosts that run these need only Redis,
torch and this package, so code under test on them cannot reach the database."""

from __future__ import annotations

import time
from typing import Any

from rq import Queue, get_current_job

from evaluator.result import Verdict, empty_document
from evaluator.spec import EvalSpec

WEB_QUEUE = "web"
RECORD_RESULT = "leaderboard.jobs.record_result"
MARK_RUNNING = "leaderboard.jobs.mark_running"


def _reply_queue() -> Queue | None:
    job = get_current_job()
    if job is None:
        return None
    return Queue(WEB_QUEUE, connection=job.connection)


def evaluate_job(spec: dict[str, Any], submission_id: int) -> dict[str, Any]:
    """Evaluates one submission and sends the result document to the web side.

    The reply is sent even when the evaluator itself fails, as an ``infra_error`` document, so the row never
    waits for the reaper when the worker is alive.
    """
    from evaluator.runner import evaluate  # imported here so the web side can import this module without torch

    queue = _reply_queue()
    job = get_current_job()
    if queue is not None:
        queue.enqueue(MARK_RUNNING, submission_id, job.worker_name if job else "", time.time())
    try:
        document = evaluate(EvalSpec.from_dict(spec))
    except Exception as exc:  # the evaluator's own failure, not the solution's
        document = empty_document()
        document["verdict"] = Verdict.INFRA_ERROR.value
        document["message"] = f"the evaluator failed: {type(exc).__name__}: {exc}"
    if queue is not None:
        queue.enqueue(RECORD_RESULT, submission_id, document)
    return document


def prebuild_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs on the ``<profile>-build`` queue: compiles the solution's extensions before its GPU job starts."""
    from evaluator.prebuild import prebuild

    return prebuild(EvalSpec.from_dict(spec))


def build_queue(profile: str) -> str:
    return f"{profile}-build"
