"""RQ job functions that GPU (and CPU) workers run. They never touch the database: a worker reports back by
enqueueing a job on the web side's queue, which stores the result. Hosts that run these need only Redis,
torch and this package, so code under test on them cannot reach the database."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from rq import Queue, Retry, get_current_job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException

from evaluator.contract.jobs import (
    MARK_CHECKING,
    MARK_RUNNING,
    RECORD_CHECK,
    RECORD_RESULT,
    TEST_MARK_RUNNING,
    TEST_RECORD_RESULT,
    WEB_QUEUE,
)
from evaluator.contract import signing, testmode
from evaluator.contract.result import Verdict, empty_document
from evaluator.contract.spec import EvalSpec
from evaluator.checks.problem_check import failed_report

logger = logging.getLogger(__name__)

# A reply whose job fails (the database is down) runs again after these pauses, in seconds; the web worker's
# scheduler (`rqworker web --with-scheduler`) queues it again. After the last, the reaper still recovers the result
# from this job's return value. ARENA_REPLY_RETRY_INTERVALS="5,30,..." overrides them on the worker's host.
REPLY_RETRY_INTERVALS = (5, 15, 30, 60, 120, 300, 600, 900)


def reply_retry() -> Retry:
    raw = os.environ.get("ARENA_REPLY_RETRY_INTERVALS", "").strip()
    intervals = [int(float(x)) for x in raw.split(",") if x.strip()] if raw else list(REPLY_RETRY_INTERVALS)
    return Retry(max=len(intervals), interval=intervals)


def _reply_queue() -> Queue | None:
    job = get_current_job()
    if job is None:
        return None
    return Queue(WEB_QUEUE, connection=job.connection, serializer=JSONSerializer)


def signed_result(
    submission_id: int, document: dict[str, Any], job_id: str, nonce: str, kind: str = RECORD_RESULT
) -> dict[str, Any]:
    """What the web side records (and the reaper recovers from a finished job): the document with the worker's
    signature over it, this submission, the job issued and its nonce."""
    return {
        "document": document,
        "job_id": job_id,
        "nonce": nonce,
        "signature": signing.sign(kind, submission_id, job_id, nonce, document),
    }


def evaluate_job(spec: dict[str, Any], submission_id: int, nonce: str) -> dict[str, Any]:
    """Evaluates one submission and sends the result document to the web side, signed for this job and nonce.

    The reply is sent even when the evaluator itself fails, as an ``infra_error`` document, so the row never
    waits for the reaper when the worker is alive. Returns the signed result (the reaper's copy).
    """
    return _evaluate_and_reply(spec, submission_id, MARK_RUNNING, RECORD_RESULT, nonce=nonce)


def evaluate_test_job(spec: dict[str, Any], test_id: int, nonce: str) -> dict[str, Any]:
    """Test mode (``<profile>-test``, the fast lane): the same evaluation, marked unranked, replied (signed like a
    submission's) to the test's own jobs, so it can never land on a submission."""
    return _evaluate_and_reply(
        spec,
        test_id,
        TEST_MARK_RUNNING,
        TEST_RECORD_RESULT,
        nonce=nonce,
        finish=testmode.annotate,
    )


def _evaluate_and_reply(
    spec: dict[str, Any], submission_id: int, mark_running: str, record: str, *, nonce: str, finish: Any = None
) -> dict[str, Any]:
    """Evaluates, replies with ``mark_running`` and ``record`` (each carrying the nonce and the worker's signature
    over it), and returns the signed result. ``finish(document, spec)`` amends the document before it is signed. The
    spec is read here once and handed down: ``evaluate`` resolves it and dispatches it, to the host or to its imported
    suite's evaluator (docs/architecture.md, "One evaluation's path")."""
    from evaluator.suites.installed import evaluate  # here, so the web side can import this module without the host

    queue = _reply_queue()
    job = get_current_job()
    job_id = job.id if job else ""
    if queue is not None:
        worker, started = ((job.worker_name if job else "") or "")[:255], time.time()
        queue.enqueue(
            mark_running,
            submission_id,
            worker,
            started,
            job_id,
            nonce,
            signing.sign(mark_running, submission_id, job_id, nonce, {"worker": worker, "started": started}),
            retry=reply_retry(),
        )
    parsed: EvalSpec | None = None
    try:
        parsed = EvalSpec.from_dict(spec)
        document = evaluate(parsed)
    except JobTimeoutException:  # the whole job ran past its limit: the evaluator's phase limits should fire first
        document = empty_document()
        document["verdict"] = Verdict.INFRA_ERROR.value
        document["message"] = (
            f"The evaluation ran past the job's limit of {job.timeout if job else '?'} s and was "
            f"stopped; the evaluator's own phase limits should have ended it first."
        )
    except Exception as exc:  # the evaluator's own failure, not the solution's
        document = empty_document()
        document["verdict"] = Verdict.INFRA_ERROR.value
        if parsed is None:  # the spec itself: what is wrong with it is the submitter's to read
            document["message"] = f"the evaluation's spec was refused: {type(exc).__name__}: {exc}"
        else:
            # The evaluator's own text names host folders (an OSError names its file), and no rewrite of host paths
            # has run on it: the result says what failed, the worker's log says where.
            logger.exception("the evaluator failed")
            document["message"] = f"the evaluator failed ({type(exc).__name__}); the worker's log has the details"
    if finish is not None:
        document = finish(document, parsed if parsed is not None else EvalSpec.from_dict(spec))
    result = signed_result(submission_id, document, job_id, nonce, record)
    if queue is not None:
        queue.enqueue(record, submission_id, document, job_id, nonce, result["signature"], retry=reply_retry())
    return result


def prebuild_job(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs on the ``<profile>-build`` queue: compiles the solution's extensions before its GPU job starts."""
    from evaluator.host.prebuild import prebuild

    return prebuild(EvalSpec.from_dict(spec))


# --- problem proposals' checks (evaluator/checks/problem_check.py, run in the sandbox by evaluator/host/check.py) ---


def signed_report(proposal_id: int, report: dict[str, Any], job_id: str, nonce: str) -> dict[str, Any]:
    """The report with the worker's signature over it, this proposal, the job issued and its nonce (what the web side
    records, and what the reaper recovers from a finished job)."""
    return {
        "report": report,
        "job_id": job_id,
        "nonce": nonce,
        "signature": signing.sign(RECORD_CHECK, proposal_id, job_id, nonce, report),
    }


def check_proposal_job(
    proposal_id: int, category: str, name: str, files: dict[str, str], solutions: list[dict[str, str]], nonce: str
) -> dict[str, Any]:
    """Runs on the ``checks`` queue: checks one proposal in the sandbox and sends the signed report to the web side.

    The report is sent even when the check itself breaks, so the proposal does not stay ``checking``."""
    from evaluator.host.check import check_sandboxed  # the sandbox's module only where a check runs

    job = get_current_job()
    queue = None if job is None else Queue(WEB_QUEUE, connection=job.connection, serializer=JSONSerializer)
    job_id = job.id if job else ""
    if queue is not None:
        worker = (job.worker_name or "")[:200]
        queue.enqueue(
            MARK_CHECKING,
            proposal_id,
            job_id,
            worker,
            nonce,
            signing.sign(MARK_CHECKING, proposal_id, job_id, nonce, {"worker": worker}),
        )
    try:
        report = check_sandboxed(category, name, files, solutions)
    except Exception as exc:  # the checker's own failure
        report = failed_report(f"the check could not run: {type(exc).__name__}: {exc}")
    signed = signed_report(proposal_id, report, job_id, nonce)
    if queue is not None:
        queue.enqueue(RECORD_CHECK, proposal_id, job_id, report, nonce, signed["signature"])
    return signed
