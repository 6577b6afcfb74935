"""Reads of submissions: one submission with what its viewer may see of it, its queue position, a user's list."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import timedelta

import django_rq
from django.db.models import F, QuerySet
from django.utils import timezone
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


# A worker is live while its heartbeat is this fresh: RQ's default worker TTL (420 s) plus some slack.
WORKER_HEARTBEAT_S = 480
TYPICAL_RUN_SAMPLE = 20  # recent finished evaluations of a profile that its typical duration is the median of


@dataclass(frozen=True)
class QueueStatus:
    position: int | None  # 1 = next; None when the job is not waiting in the queue
    length: int
    workers: int  # live workers listening on this profile's queue now
    busy: int = 0  # of those, the ones evaluating something now
    typical_s: float | None = None  # median wall time of the profile's recent evaluations
    limit_s: int | None = None  # this job's limit (the most one evaluation may take)

    @property
    def estimate_s(self) -> float | None:
        """Seconds until this job starts, roughly: the jobs ahead of it and the ones running, at the typical
        duration, spread over the live workers. None without a worker or without a finished evaluation to go by."""
        if not self.workers or self.typical_s is None or self.position is None:
            return None
        ahead = (self.position - 1) + self.busy
        return ahead * self.typical_s / self.workers


def _live_workers(connection) -> list[Worker]:
    cutoff = timezone.now() - timedelta(seconds=WORKER_HEARTBEAT_S)
    live = []
    for worker in Worker.all(connection=connection):
        beat = worker.last_heartbeat
        if beat is not None and timezone.is_naive(beat):
            beat = timezone.make_aware(beat, timezone.utc)
        if beat is None or beat >= cutoff:
            live.append(worker)
    return live


def live_queues() -> dict[str, int]:
    """Live RQ workers (heartbeat within WORKER_HEARTBEAT_S) per queue name, for every queue in settings'
    RQ_QUEUES (0 when none serves it). Empty when Redis cannot be reached: callers then say nothing either way."""
    from django.conf import settings

    try:
        connection = django_rq.get_connection("web")
        counts = dict.fromkeys(settings.RQ_QUEUES, 0)
        for worker in _live_workers(connection):
            for name in worker.queue_names():
                counts[name] = counts.get(name, 0) + 1
        return counts
    except RedisError:
        return {}


def profile_typical_duration_s(*, profile: str) -> float | None:
    """The median wall time (start to finish) of the profile's last TYPICAL_RUN_SAMPLE evaluations."""
    done = (Submission.objects.filter(profile=profile, state=Submission.State.FINISHED, started_at__isnull=False,
                                      finished_at__isnull=False, finished_at__gte=F("started_at"))
            .order_by("-finished_at").values_list("started_at", "finished_at")[:TYPICAL_RUN_SAMPLE])
    durations = [(end - start).total_seconds() for start, end in done]
    return statistics.median(durations) if durations else None


def submission_queue_status(*, submission: Submission) -> QueueStatus | None:
    """Where a queued submission stands in its profile's queue, how many live workers serve that queue and how
    many of them are busy, and a rough wait. None when Redis cannot be reached (the page still renders)."""
    try:
        queue = django_rq.get_queue(PROFILES[submission.profile].queue)
        ids = queue.get_job_ids()
        position = ids.index(submission.job_id) + 1 if submission.job_id in ids else None
        workers = [w for w in _live_workers(queue.connection) if queue.name in w.queue_names()]
        busy = sum(1 for w in workers if w.get_state() == "busy")
    except RedisError:
        return None
    return QueueStatus(position=position, length=len(ids), workers=len(workers), busy=busy,
                       typical_s=profile_typical_duration_s(profile=submission.profile),
                       limit_s=submission.job_timeout_s or None)


def submission_list(*, user) -> QuerySet[Submission]:
    """The user's solo submissions, newest first (a model run's attempts are listed on the run's page)."""
    return (Submission.objects.filter(user=user, model_run__isnull=True).select_related("problem", "result")
            .order_by("-created_at", "-id"))


def submission_source_visible(*, submission: Submission, user) -> bool:
    """Sources are private to their author (and staff) until the author publishes them (``publishing``): a published
    submission, or an attempt of a published model run, is readable by everyone."""
    if submission.is_published:
        return True
    return bool(user.is_authenticated and (user.pk == submission.user_id or user.is_staff))


def submission_owned(*, submission: Submission, user) -> bool:
    """Its author (or staff): who may cancel it, publish it or take it back."""
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
    return not submission.is_done and submission_owned(submission=submission, user=user)
