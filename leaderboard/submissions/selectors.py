"""Reads of submissions: one submission with what its viewer may see of it, its queue position, a user's list."""

from __future__ import annotations

from dataclasses import dataclass

import django_rq
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from redis.exceptions import RedisError
from rq import Worker

from evaluator.contract.profiles import PROFILES
from leaderboard.models import Submission, Trajectory


def submission_detail(*, submission_id: int) -> Submission:
    return get_object_or_404(Submission.objects.select_related("problem", "user", "result", "model_run"),
                             pk=submission_id)


def submission_trajectories(*, submission: Submission) -> QuerySet[Trajectory]:
    """The trajectory files a model run shipped with this attempt (shown with the source, to the same people)."""
    return Trajectory.objects.filter(submission=submission).order_by("filename")


@dataclass(frozen=True)
class QueueStatus:
    position: int | None  # 1 = next; None when the job is not waiting in the queue
    length: int
    workers: int  # workers listening on this profile's queue now


def submission_queue_status(*, submission: Submission) -> QueueStatus | None:
    """Where a queued submission stands in its profile's queue, and whether any worker serves that queue.
    None when Redis cannot be reached (the page still renders)."""
    try:
        queue = django_rq.get_queue(PROFILES[submission.profile].queue)
        ids = queue.get_job_ids()
        position = ids.index(submission.job_id) + 1 if submission.job_id in ids else None
        return QueueStatus(position=position, length=len(ids), workers=Worker.count(queue=queue))
    except RedisError:
        return None


def submission_list(*, user) -> QuerySet[Submission]:
    """The user's solo submissions, newest first (a model run's attempts are listed on the run's page)."""
    return (Submission.objects.filter(user=user, model_run__isnull=True).select_related("problem", "result")
            .order_by("-created_at", "-id"))


def submission_source_visible(*, submission: Submission, user) -> bool:
    """Sources are private to their author (and staff) until the site publishes best solutions."""
    return bool(user.is_authenticated and (user.pk == submission.user_id or user.is_staff))


PRIVATE_RESULT_KEYS = ("logs", "traceback")  # they quote the solution's source (tracebacks, compiler errors)


def submission_result_document(*, submission: Submission, user) -> dict | None:
    """The result document as ``user`` may read it: whole for the author and staff; for anyone else without the
    rank logs and the traceback, which quote lines of the private source."""
    result = getattr(submission, "result", None)
    if result is None:
        return None
    document = result.document
    if submission_source_visible(submission=submission, user=user) or not isinstance(document, dict):
        return document
    return {k: v for k, v in document.items() if k not in PRIVATE_RESULT_KEYS}


def submission_cancellable(*, submission: Submission, user) -> bool:
    return not submission.is_done and submission_source_visible(submission=submission, user=user)
