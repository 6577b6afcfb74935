"""Writes on one submission: create (validated, stored, queued after the commit), mark running, cancel.

Errors raised for people are ``django.core.exceptions.ValidationError`` keyed by the field at fault (``problem``,
``profile``, ``source``) with a message that says what is wrong and what to do (``validation``). What a worker reports
at the end is stored by ``results``; what Redis lost is settled by ``reaper``.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from evaluator.contract import states
from leaderboard.models import ModelRun, Problem, Submission
from leaderboard.rankings import generations
from leaderboard.rankings.services import run_score_mark_stale
from leaderboard.submissions import queueing, validation

logger = logging.getLogger(__name__)


def submission_create(
    *, user, problem: Problem | str, profile: str, filename: str | None, source: str | bytes
) -> Submission:
    """Validates an upload, stores it as ``queued`` and enqueues its evaluation after the commit.

    Raises ValidationError (nothing stored, nothing queued) when the upload cannot be evaluated.
    """
    problem = validation.problem_resolve(problem)
    validation.profile_check(problem, profile)
    name = validation.filename_clean(filename)
    validation.filename_check(problem, name)
    text = validation.source_validate(source)

    with transaction.atomic():
        user_lock(user)  # the limits below are counted under the user's row lock, so concurrent uploads queue up here
        pending = Submission.objects.filter(
            user=user, state__in=states.PENDING_STATES, model_run__isnull=True
        )  # a model run's attempts have their own limit
        if pending.count() >= settings.ARENA_MAX_PENDING_PER_USER:
            raise ValidationError(
                f"You already have {settings.ARENA_MAX_PENDING_PER_USER} submissions waiting or "
                f"running. Wait for some to finish, then submit again."
            )
        evaluation_budget_check(user, 1)
        submission = queueing.submission_row(user=user, problem=problem, profile=profile, filename=name, text=text)
        submission.save()
        queueing.enqueue_after_commit(submission)
    return submission


def user_lock(user) -> None:
    """Locks the user's row until the transaction ends (SELECT ... FOR UPDATE; on SQLite every transaction already
    holds the write lock, settings' IMMEDIATE mode): one user's quota checks and writes happen one at a time."""
    # The user model itself, not type(user): a request's user is a lazy wrapper around the instance.
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True).first()


def evaluation_budget_check(user, count: int) -> None:
    """Refuses ``count`` new evaluations (a submission, or a model run's attempts) that would take the user past
    settings.ARENA_EVALUATIONS_PER_HOUR started in the last hour. Staff are exempt. Call under :func:`user_lock`."""
    budget = settings.ARENA_EVALUATIONS_PER_HOUR
    if getattr(user, "is_staff", False) or budget <= 0:
        return
    used = Submission.objects.filter(user=user, created_at__gte=timezone.now() - timedelta(hours=1)).count()
    if used + count > budget:
        left = max(budget - used, 0)
        what = "This model run has" if count > 1 else "This submission is"
        raise ValidationError(
            f"{what} {count} evaluation{'s' if count != 1 else ''}; you may start {budget} an hour and have "
            f"{left} left now ({used} started in the last hour). "
            + (
                "Split the run by problems and upload the parts an hour apart, or ask an operator to raise your budget."
                if count > 1
                else "Try again later."
            )
        )


def submission_changed(submission: Submission) -> None:
    """The cached pages that show this submission (its problem's, its author's, its run's) are out of date."""
    generations.submission_changed(
        problem_id=submission.problem_id, user_id=submission.user_id, model_run_id=submission.model_run_id
    )


def _running(submission: Submission) -> None:
    if submission.model_run_id is not None:
        ModelRun.objects.filter(pk=submission.model_run_id, state=ModelRun.State.QUEUED).update(
            state=ModelRun.State.RUNNING
        )
    submission_changed(submission)  # a run's page shows its attempts' state


def _late(submission: Submission, worker: str, started: datetime) -> None:
    """A "running" message after the result: fills in when and where the finished row ran."""
    if submission.state == Submission.State.FINISHED and submission.started_at is None:
        submission.started_at = started
        submission.worker = submission.worker or worker
        submission.save(update_fields=["started_at", "worker"])


def submission_mark_running(
    *, submission_id: int, worker: str, started_at: float | datetime | None, job_id: str | None = None
) -> Submission | None:
    """A worker started the job. Only a queued row moves to running; a late or repeated message changes nothing
    (except filling in when and where a finished row ran, if its result arrived first), and neither does one from
    an attempt (``job_id``) that is no longer the current one (the lifecycle's ``Work.mark_running``)."""
    return queueing.SUBMISSION.mark_running(
        row_id=submission_id, job_id=job_id, worker=worker, started=started_at, on_running=_running, otherwise=_late
    )


def submission_cancel(*, submission_id: int, user) -> Submission:
    """The owner (or staff) stops a submission that is still queued or running. Its job leaves the queue; one a
    worker already started runs to its end and its result is dropped. Raises PermissionDenied for anyone else and
    ValidationError when the submission already ended."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(pk=submission_id).first()
        if submission is None:
            raise Http404(f"There is no submission #{submission_id}.")
        if not (user.is_authenticated and (user.pk == submission.user_id or user.is_staff)):
            raise PermissionDenied("Only the author of a submission can cancel it.")
        if submission.state == Submission.State.CANCELLED:
            return submission
        if submission.state == Submission.State.FINISHED:
            raise ValidationError(
                f"Submission #{submission.pk} already finished ({submission.verdict}); there is nothing to cancel."
            )
        submission.state = Submission.State.CANCELLED
        submission.finished_at = timezone.now()
        submission.save(update_fields=["state", "finished_at"])
        submission_changed(submission)
        queueing.job_discard_after_commit(submission)
        queueing.queued_release(profile=submission.profile)  # its slot on the fair queue is free
        if submission.model_run_id is not None:  # a cancelled attempt is done: the run's progress counts it
            run_score_mark_stale(model_run_id=submission.model_run_id)
    return submission
