"""Putting a submission's evaluation on its hardware profile's queue, and taking it off again.

A row to evaluate is made one way (:func:`submission_row`); its lifecycle is the one every kind of queued work has
(``leaderboard.lifecycle``: :data:`SUBMISSION` names its fields and its jobs), so it gets its next job id from
:func:`enqueue_after_commit` and reaches Redis only once the transaction that saved it commits. The job carries a
self-contained spec (a JSON dict), never ORM objects; its name and queue come from ``evaluator.contract.jobs``.

The queue is fair: a user has at most settings.ARENA_QUEUED_JOBS_PER_USER jobs on one queue in RQ at a time (waiting
or running). A row beyond that is *held*: saved ``queued`` with no job yet (``enqueue_count`` 0), the database being
the source of truth, and :func:`queued_release` puts held rows on their queues in per-user round-robin order as
slots free up (a result recorded, a submission cancelled, and every reaper pass). One user's 500 attempts then delay
another user's single submission by at most one evaluation.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Min, Q

from evaluator.contract import jobs
from evaluator.contract.build import needs_build
from evaluator.contract.profiles import PROFILES
from evaluator.contract.spec import DEFAULT_TIMEOUTS, EvalSpec
from leaderboard.lifecycle.queues import JobOrder
from leaderboard.lifecycle.signatures import nonce_for
from leaderboard.lifecycle import work as lifecycle_work
from leaderboard.lifecycle.work import Work
from leaderboard.models import ModelRun, Problem, Submission
from leaderboard.submissions import fingerprint

BUILD_JOB_TIMEOUT_S = 900


def job_timeout_s() -> int:
    """The RQ job's limit: about 1.2× the sum of the evaluator's phase limits, so the phases time out first."""
    return lifecycle_work.job_timeout_s(DEFAULT_TIMEOUTS)


def spec_for(submission: Submission) -> EvalSpec:
    """The self-contained spec a worker gets: ids and source, never ORM objects."""
    return EvalSpec(
        problem_id=submission.problem_id,
        solution_source=submission.source,
        profile=submission.profile,
        solution_name=submission.filename,
        problem_version=submission.problem_version,
        problem_hash=submission.problem_hash,
    )


def submission_row(
    *,
    user,
    problem: Problem,
    profile: str,
    filename: str,
    text: str,
    model_run: ModelRun | None = None,
    attempt: int | None = None,
) -> Submission:
    """A new, unsaved submission of validated source: the one way a row to evaluate is made (the fields it shares
    with a test's row from ``EvaluatedSource.for_source``)."""
    key = fingerprint.source_key(text)
    own = {"source_key": key, "model_run": model_run, "attempt": attempt}
    return Submission.for_source(user, problem, profile, filename, text, job_timeout_s=job_timeout_s(), **own)


def _queue_profiles(profile: str) -> list[str]:
    """The profiles whose jobs share ``profile``'s RQ queue (the fair share is counted per queue)."""
    queue = PROFILES[profile].queue
    return [name for name, p in PROFILES.items() if p.queue == queue]


def held_rows():
    """Rows waiting for a slot on their queue: queued, never given a job."""
    return Submission.objects.filter(state=Submission.State.QUEUED, enqueue_count=0)


def _jobs_in_queue(user_id: int, profiles: list[str], *, besides: int | None = None) -> int:
    """The user's jobs in RQ on one queue, as the database knows them: rows running, or queued with a job."""
    rows = Submission.objects.filter(user_id=user_id, profile__in=profiles).filter(
        Q(state=Submission.State.RUNNING) | Q(state=Submission.State.QUEUED, enqueue_count__gt=0)
    )
    if besides is not None:
        rows = rows.exclude(pk=besides)
    return rows.count()


def _held_back(submission: Submission) -> bool:
    limit = settings.ARENA_QUEUED_JOBS_PER_USER
    if limit <= 0 or submission.user_id is None or submission.profile not in PROFILES:
        return False
    profiles = _queue_profiles(submission.profile)
    if held_rows().filter(user_id=submission.user_id, profile__in=profiles, pk__lt=submission.pk).exists():
        return True  # older rows of the user wait already: this one goes after them
    return _jobs_in_queue(submission.user_id, profiles, besides=submission.pk) >= limit


def _orders(submission: Submission) -> list[JobOrder]:
    """A submission's jobs: its evaluation on its profile's queue, after a build on the host's CPUs when it needs one.
    The worker signs its replies with the job's nonce: a result is accepted only for this job."""
    spec = spec_for(submission).to_dict()
    profile = submission.profile
    description = f"submission #{submission.pk}: {submission.problem_id} on {profile}"
    evaluate = JobOrder(
        queue=PROFILES[profile].queue,
        function=jobs.EVALUATE,
        args=(spec, submission.pk, nonce_for(submission.job_id)),
        timeout=submission.job_timeout_s,
        description=description,
        job_id=submission.job_id,
    )
    if PROFILES[profile].device == "cuda" and needs_build(submission.source):
        # Compiles on the GPU host's CPUs while the GPU works through the jobs ahead of this one.
        return [
            JobOrder(
                queue=jobs.build_queue(profile),
                function=jobs.PREBUILD,
                args=(spec,),
                timeout=BUILD_JOB_TIMEOUT_S,
                description=f"build for {description}",
            ),
            evaluate,
        ]
    return [evaluate]


SUBMISSION: Work[Submission] = Work(
    model=Submission,
    name="submission",
    job_prefix="submission",
    waiting=Submission.State.QUEUED,
    running=Submission.State.RUNNING,
    orders=_orders,
    queue_of=lambda submission: PROFILES[submission.profile].queue,
    if_redis_fails="the reaper will retry",
    heartbeat_field="heartbeat_at",
)


def enqueue_after_commit(submission: Submission, *, fair: bool = True) -> None:
    """Gives the row its next job id now and puts the job on its queue once the transaction commits (the lifecycle's
    ``Work.enqueue_after_commit``).

    A new row whose user already has settings.ARENA_QUEUED_JOBS_PER_USER jobs on that queue is held instead (left
    ``queued`` without a job, for :func:`queued_release`). A further attempt of a row (``enqueue_count`` > 0) takes
    the place of the attempt that failed, so it is never held.
    """
    if fair and submission.enqueue_count == 0 and _held_back(submission):
        return
    SUBMISSION.enqueue_after_commit(submission)


def job_discard_after_commit(submission: Submission) -> None:
    """Takes the submission's current job off its queue once the transaction commits; a job a worker already started
    is left to finish (its report is then ignored)."""
    if submission.profile in PROFILES:
        SUBMISSION.discard_after_commit(submission)


def queued_release(*, profile: str | None = None) -> list[int]:
    """Puts held rows on their queues while their users have room (settings.ARENA_QUEUED_JOBS_PER_USER), one row per
    user per round, users in the order of their oldest held row, each user's rows oldest first: RQ then serves
    users in turn. ``profile`` limits it to that profile's queue. Call it inside a transaction (the jobs reach Redis
    when it commits); each user's row is locked while their share is counted, so concurrent releases never give a user
    more than the limit. Returns the ids released."""
    limit = settings.ARENA_QUEUED_JOBS_PER_USER
    held = held_rows()
    if profile is not None:
        if profile not in PROFILES:
            return []
        held = held.filter(profile__in=_queue_profiles(profile))
    queues: dict[str, list[str]] = {}
    for name in held.values_list("profile", flat=True).distinct():
        if name in PROFILES:
            queues.setdefault(PROFILES[name].queue, _queue_profiles(name))
    released: list[int] = []
    for profiles in queues.values():
        users = [
            row["user_id"]
            for row in held.filter(profile__in=profiles).values("user_id").annotate(first=Min("id")).order_by("first")
        ]
        room: dict[int, int] = {}
        for user_id in users:
            get_user_model().objects.select_for_update().filter(pk=user_id).values_list("pk", flat=True).first()
            room[user_id] = (
                limit - _jobs_in_queue(user_id, profiles)
                if limit > 0
                else held.filter(user_id=user_id, profile__in=profiles).count()
            )
        while any(n > 0 for n in room.values()):
            for user_id in users:
                if room[user_id] <= 0:
                    continue
                row = (
                    held.filter(user_id=user_id, profile__in=profiles)
                    .select_for_update(skip_locked=True)
                    .order_by("id")
                    .first()
                )
                if row is None:
                    room[user_id] = 0
                    continue
                enqueue_after_commit(row, fair=False)
                released.append(row.pk)
                room[user_id] -= 1
    return released
