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

from evaluator.contract import jobs
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict
from leaderboard.models import Submission, Trajectory


def submission_detail(*, submission_id: int) -> Submission:
    return get_object_or_404(
        Submission.objects.select_related("problem", "user", "result", "model_run"), pk=submission_id
    )


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
        connection = django_rq.get_connection(jobs.WEB_QUEUE)
        counts = dict.fromkeys(settings.RQ_QUEUES, 0)
        for worker in _live_workers(connection):
            for name in worker.queue_names():
                counts[name] = counts.get(name, 0) + 1
        return counts
    except RedisError:
        return {}


def profile_typical_duration_s(*, profile: str) -> float | None:
    """The median wall time (start to finish) of the profile's last TYPICAL_RUN_SAMPLE evaluations."""
    done = (
        Submission.objects.filter(
            profile=profile,
            state=Submission.State.FINISHED,
            started_at__isnull=False,
            finished_at__isnull=False,
            finished_at__gte=F("started_at"),
        )
        .order_by("-finished_at")
        .values_list("started_at", "finished_at")[:TYPICAL_RUN_SAMPLE]
    )
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
    return QueueStatus(
        position=position,
        length=len(ids),
        workers=len(workers),
        busy=busy,
        typical_s=profile_typical_duration_s(profile=submission.profile),
        limit_s=submission.job_timeout_s or None,
    )


def submission_list(*, user) -> QuerySet[Submission]:
    """The user's solo submissions, newest first (a model run's attempts are listed on the run's page)."""
    return (
        Submission.objects.filter(user=user, model_run__isnull=True)
        .select_related("problem", "result")
        .order_by("-created_at", "-id")
    )


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
# What a visitor may read of a private solution's result document; every other key (logs, traceback, diagnostics,
# anything a later evaluator adds) is left out.
PUBLIC_RESULT_KEYS = (
    "schema_version",
    "verdict",
    "message",
    "failed_ranks",
    "problem",
    "solution",
    "profile",
    "trials",
    "timing",
    "roofline",
    "flags",
    "environment",
    "phases",
    "timeline",
)
# Verdicts whose message is the judge's own words (no exception text from the solution).
JUDGE_MESSAGE_VERDICTS = (Verdict.PASSED.value, Verdict.WRONG_OUTPUT.value)
VISITOR_MESSAGES = {
    Verdict.COMPILE_ERROR.value: "The solution did not build or import.",
    Verdict.RUNTIME_ERROR.value: "The solution raised an error while it ran.",
    Verdict.TIMEOUT.value: "The solution ran past a time limit.",
    Verdict.REJECTED.value: "The judge refused the solution.",
    Verdict.INFRA_ERROR.value: "The evaluation failed on the platform's side.",
}
SHORT_HASH = 12  # hex digits of a private source's sha256 a visitor sees: enough to tell two apart, not to test a guess


def short_hash(sha256: str) -> str:
    return (sha256 or "")[:SHORT_HASH]


def result_document_public(document: dict) -> dict:
    """A private solution's result document as a visitor may see it: no exception text (the message of an error
    verdict becomes a plain sentence, the ranks' errors are dropped), no traceback or logs, the source's hash
    shortened. Verdict, timings, roofline, trials' numbers, environment stay."""
    public = {k: document[k] for k in PUBLIC_RESULT_KEYS if k in document}
    verdict = public.get("verdict")
    if verdict not in JUDGE_MESSAGE_VERDICTS:
        public["message"] = VISITOR_MESSAGES.get(str(verdict), "")
    solution = public.get("solution")
    if isinstance(solution, dict):
        public["solution"] = {
            k: (short_hash(str(v)) if k == "sha256" else v) for k, v in solution.items() if k in ("name", "sha256")
        }
    trials = public.get("trials")
    if isinstance(trials, list):
        public["trials"] = [
            {
                **trial,
                "ranks": [
                    {k: v for k, v in rank.items() if k != "error"} if isinstance(rank, dict) else rank
                    for rank in trial.get("ranks", [])
                ],
            }
            if isinstance(trial, dict)
            else trial
            for trial in trials
        ]
    return public


def submission_result_document(*, submission: Submission, user) -> dict | None:
    """The result document as ``user`` may read it: whole for the author and staff, and for everyone once the source
    is published; for anyone else what :func:`result_document_public` keeps."""
    result = getattr(submission, "result", None)
    if result is None:
        return None
    document = result.document
    if submission_source_visible(submission=submission, user=user) or not isinstance(document, dict):
        return document
    return result_document_public(document)


def submission_sha256_shown(*, submission: Submission, user) -> str:
    """The source's sha256 as ``user`` may read it: whole where the source is visible, else shortened."""
    if submission_source_visible(submission=submission, user=user):
        return submission.sha256
    return short_hash(submission.sha256)


def submission_cancellable(*, submission: Submission, user) -> bool:
    return not submission.is_done and submission_owned(submission=submission, user=user)
