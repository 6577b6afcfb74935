"""What a worker reports at the end of an evaluation, stored once; and the platform's failures, retried.

- ``result_record`` stores a result document and finishes the submission (idempotent: the first result wins);
- an ``infra_error`` (the platform failed, not the solution) sends the submission back to the queue as a new job
  while it has attempts left (settings.ARENA_MAX_ENQUEUES), and ends it as ``infra_error`` after the last;
- ``submission_fail`` is how the reaper reports such a failure for a job that could not report one itself.
- a finished submission frees its user's slot on the fair queue: held rows are released (``queueing.queued_release``);
- a stored verdict is announced after the commit (``signals.verdict_recorded``: the owner's e-mail, when asked for).

The document arrives as JSON from a worker: it is made JSON-safe and read through the contract
(``evaluator.contract.result.from_json``) before anything is stored; one that is not a result document is stored as an
``infra_error`` that says what was wrong with it.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluator.contract.result import ResultDocument, ResultDocumentError, Verdict, empty_document, from_json
from leaderboard.models import Result, Submission
from leaderboard.rankings.services import run_score_mark_stale, standing_after_result
from leaderboard.rankings.stored_figures import measured_baseline_after_result, measured_roofline_after_result
from leaderboard.submissions import queueing, services, signals, verification

logger = logging.getLogger(__name__)


def _json_safe(value: Any) -> Any:
    """What a JSON column accepts: no NaN/inf (PostgreSQL refuses them), no NUL characters, only JSON types."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value.replace("\x00", "\\0")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, dict):
        return {str(_json_safe(k)): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return _json_safe(str(value))


def _document_read(document: Any) -> ResultDocument:
    """The worker's document, JSON-safe and read through the contract. One that is not a result document becomes an
    infra_error saying why: it keeps what it carried when only its verdict or message was wrong, else it is empty."""
    if isinstance(document, dict):
        document = _json_safe(document)
    try:
        return from_json(document)
    except ResultDocumentError as exc:
        why = f"The worker sent a malformed result: {exc}."
    if isinstance(document, dict):
        earlier = document.get("message")
        kept = {
            **document,
            "verdict": Verdict.INFRA_ERROR.value,
            "message": f"{why} {earlier}" if isinstance(earlier, str) and earlier else why,
        }
        try:
            return from_json(kept)
        except ResultDocumentError:
            pass
    broken = empty_document()
    broken["verdict"], broken["message"] = Verdict.INFRA_ERROR.value, why
    return from_json(broken)


def result_record(
    *, submission_id: int, document: Any, job_id: str | None = None, current_only: bool = False
) -> Result | None:
    """Stores a result document and finishes the submission. Idempotent: once a submission has a result, a
    second delivery (a retried job, the reaper recovering a return value) changes nothing.

    An ``infra_error`` (the platform failed, not the solution) does not finish a submission that has attempts
    left (settings.ARENA_MAX_ENQUEUES): the submission goes back to the queue as a new job and None is returned.
    ``job_id`` names the attempt that reported: an infra_error from an attempt that is no longer the current one
    changes nothing; a real verdict from any attempt is kept (the first result wins).

    ``current_only`` (a worker's signed reply, ``jobs.record_result``): a report for any job but the row's current one
    is refused and logged, whatever its verdict."""
    read = _document_read(document)
    document = read.raw
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            logger.warning("result for unknown submission %s dropped", submission_id)
            return None
        existing = Result.objects.filter(submission=submission).first()
        if existing is not None or submission.state == Submission.State.CANCELLED:
            return existing
        if current_only and job_id != submission.job_id:
            logger.error(
                "refused a result for submission %s from job %r: its current job is %r",
                submission_id,
                job_id,
                submission.job_id,
            )
            return None
        services.submission_changed(submission)  # a verdict lands, or the attempt goes back to the queue
        if _attempt_settled_without_result(submission, document, job_id):
            return None
        timing, roofline = read.timing, read.roofline
        ci = timing.speedup_ci if timing else None
        result = Result.objects.create(
            submission=submission,
            document=document,
            verdict=read.verdict.value,
            speedup=timing.speedup if timing else None,
            speedup_ci_low=ci.low if ci else None,
            speedup_ci_high=ci.high if ci else None,
            baseline_median_us=timing.baseline.median_us if timing and timing.baseline else None,
            solution_median_us=timing.solution.median_us if timing and timing.solution else None,
            roofline_fraction=roofline.solution_fraction if roofline else None,
            problem_version=read.problem.version or submission.problem_version,
            problem_hash=(read.problem.content_hash or submission.problem_hash)[:64],
            protocol_revision=timing.protocol_revision if timing else None,
            speedup_estimator=(timing.speedup_estimator if timing else "")[:255],
            worker=submission.worker[:255],
        )
        submission.state = Submission.State.FINISHED
        submission.verdict = result.verdict
        submission.finished_at = timezone.now()
        submission.save(update_fields=["state", "verdict", "finished_at"])
        if submission.model_run_id is not None:  # scored by one job per batch of its results, after the commit
            run_score_mark_stale(model_run_id=submission.model_run_id)
        standing_after_result(result=result)  # its problem's stored standing, in this transaction
        measured_roofline_after_result(result=result)  # the roofline its problem page shows, where measured
        measured_baseline_after_result(result=result)  # and the baseline's time it shows
        verification.after_result(result)
        queueing.queued_release(profile=submission.profile)  # its slot on the queue is free: the next user's turn
        signals.verdict_recorded_after_commit(submission=submission, result=result)  # e.g. the owner's e-mail
    return result


def _infra_error_document(submission: Submission, message: str) -> dict[str, Any]:
    document = empty_document()
    document["verdict"] = Verdict.INFRA_ERROR.value
    document["message"] = message
    document["problem"] = {
        "id": submission.problem_id,
        "version": submission.problem_version,
        "content_hash": submission.problem_hash,
    }
    document["profile"] = {"name": submission.profile}
    document["solution"] = {"name": submission.filename, "sha256": submission.sha256}
    return document


def submission_fail(*, submission_id: int, message: str, job_id: str | None = None) -> Result | None:
    """Reports an ``infra_error`` for the attempt ``job_id`` (default: the current one): the platform, not the
    solution, failed. Like a worker's infra_error, it re-enqueues the submission while it has attempts left and
    ends it as infra_error after the last; None when it was re-enqueued (or the attempt was already replaced)."""
    submission = Submission.objects.get(pk=submission_id)
    return result_record(
        submission_id=submission_id, document=_infra_error_document(submission, message), job_id=job_id
    )


def _attempt_settled_without_result(submission: Submission, document: dict[str, Any], job_id: str | None) -> bool:
    """Called by result_record with the row locked. True when the report ends here without a Result: an infra_error
    from a replaced attempt (ignored), or one with attempts left (the submission is queued again as a new job).
    Wrong answers, timeouts and every other verdict of the solution are never retried."""
    stale = bool(job_id and submission.job_id and job_id != submission.job_id)
    if document.get("verdict") != Verdict.INFRA_ERROR.value:
        if stale:  # a replaced attempt finished after all: keep its verdict, drop the attempt now queued
            queueing.job_discard_after_commit(submission)
        return False
    if stale:
        logger.warning(
            "submission %s: infra_error from replaced attempt %s ignored (current: %s)",
            submission.pk,
            job_id,
            submission.job_id,
        )
        return True
    outcome, message = queueing.SUBMISSION.platform_failure(
        submission, str(document.get("message") or "The platform failed.")
    )
    if outcome == "requeued":  # takes the failed attempt's place on the fair queue
        return True
    if submission.enqueue_count > 1:
        document["message"] = message
    return False
