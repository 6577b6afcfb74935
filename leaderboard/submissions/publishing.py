"""Publishing: an owner makes a solution's source (or a model run's attempts and trajectories) readable and
downloadable by everyone, with its result beside it, and can take it back. Private stays private: nothing is
readable by others until its owner publishes it.

A published submission's source, rank logs and traceback are shown to anyone (the logs quote the source); a model
run's publication covers every attempt and trajectory of the run. Publishing changes no score, only who may read.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.shortcuts import get_object_or_404
from django.utils import timezone

from leaderboard.models import ModelRun, Submission
from leaderboard.rankings import generations, prepared


def _owner_or_staff(owner_id: int, user) -> None:
    if not (user.is_authenticated and (user.pk == owner_id or user.is_staff)):
        raise PermissionDenied("Only its owner can publish or unpublish it.")


@transaction.atomic
def submission_publish(*, submission_id: int, user, published: bool = True) -> Submission:
    """Publishes (or unpublishes) a solo submission's source. A model run's attempt is published with its run."""
    submission = get_object_or_404(Submission.objects.select_for_update(), pk=submission_id)
    _owner_or_staff(submission.user_id, user)
    if submission.model_run_id is not None:
        from django.core.exceptions import ValidationError

        raise ValidationError(
            f"Submission #{submission.pk} is an attempt of model run #{submission.model_run_id}: "
            "publish the run to publish its attempts."
        )
    if published != (submission.published_at is not None):
        submission.published_at = timezone.now() if published else None
        submission.save(update_fields=["published_at"])
        generations.submission_changed(problem_id=submission.problem_id, user_id=submission.user_id, model_run_id=None)
    return submission


@transaction.atomic
def model_run_publish(*, run_id: int, user, published: bool = True) -> ModelRun:
    """Publishes (or unpublishes) every attempt and trajectory of a model run."""
    run = get_object_or_404(ModelRun.objects.select_for_update(), pk=run_id)
    _owner_or_staff(run.user_id, user)
    if published != (run.published_at is not None):
        run.published_at = timezone.now() if published else None
        run.save(update_fields=["published_at"])
        problems = Submission.objects.filter(model_run=run).values_list("problem_id", flat=True).distinct()
        generations.rankings_changed(
            generations.run_scope(run.pk),
            generations.RUNS,
            generations.user_scope_of(run.user_id),
            *[generations.problem_scope(p) for p in problems],
        )
    return run


def published_q(prefix: str = "") -> Q:
    """Rows (submissions, or through ``prefix`` e.g. "submission__") whose source anyone may read."""
    return Q(**{f"{prefix}published_at__isnull": False}) | Q(**{f"{prefix}model_run__published_at__isnull": False})


def published_submission_ids(*, ids: list[int]) -> set[int]:
    """Which of these submissions anyone may read (one query)."""
    if not ids:
        return set()
    wanted = tuple(ids)  # (its query compiled once per process for the same ids: a page's top rows, until they change)
    return {
        pk
        for (pk,) in prepared.rows(
            ("published-ids", wanted),
            lambda: Submission.objects.filter(published_q(), pk__in=wanted).values_list("pk"),
        )
    }
