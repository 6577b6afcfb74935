"""Putting a submission's evaluation on its hardware profile's queue, and taking it off again.

A row to evaluate is made one way (:func:`submission_row`), gets its next job id from :func:`enqueue_after_commit`,
and reaches Redis only once the transaction that saved it commits. The job carries a self-contained spec (a JSON
dict), never ORM objects; its name and queue come from ``evaluator.contract.jobs``, the one place jobs are named.
"""

from __future__ import annotations

import hashlib
import logging
import math

import django_rq
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from evaluator.contract import jobs
from evaluator.contract.build import needs_build
from evaluator.contract.profiles import PROFILES
from evaluator.contract.spec import DEFAULT_TIMEOUTS, EvalSpec
from leaderboard.models import ModelRun, Problem, Submission
from leaderboard.submissions.signatures import nonce_for
from leaderboard.submissions import fingerprint

logger = logging.getLogger(__name__)

BUILD_JOB_TIMEOUT_S = 900


def job_timeout_s() -> int:
    """The RQ job's limit: about 1.2× the sum of the evaluator's phase limits, so the phases time out first."""
    return math.ceil(settings.ARENA_JOB_TIMEOUT_FACTOR * sum(DEFAULT_TIMEOUTS.values()))


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


def submission_row(*, user, problem: Problem, profile: str, filename: str, text: str,
                   model_run: ModelRun | None = None, attempt: int | None = None) -> Submission:
    """A new, unsaved submission of validated source: the one way a row to evaluate is made."""
    return Submission(
        user=user, problem=problem, profile=profile, problem_version=problem.version,
        problem_hash=problem.content_hash, filename=filename, source=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), source_key=fingerprint.source_key(text),
        job_timeout_s=job_timeout_s(), model_run=model_run, attempt=attempt,
    )


def enqueue_after_commit(submission: Submission) -> None:
    """Gives the row its next job id now and puts the job on its queue once the transaction commits.

    If Redis is down at that moment the row stays ``queued`` with a job id Redis does not know, and the
    reaper enqueues it again later: the database decides what is queued.
    """
    submission.enqueue_count += 1
    submission.job_id = f"submission-{submission.pk}-{submission.enqueue_count}"
    submission.enqueued_at = timezone.now()
    submission.save(update_fields=["enqueue_count", "job_id", "enqueued_at"])
    spec = spec_for(submission).to_dict()
    submission_id, job_id, profile = submission.pk, submission.job_id, submission.profile
    nonce = nonce_for(job_id)  # the worker signs its replies with it: a result is accepted only for this job
    description = f"submission #{submission.pk}: {submission.problem_id} on {profile}"
    timeout = submission.job_timeout_s

    prebuild = PROFILES[profile].device == "cuda" and needs_build(submission.source)

    def enqueue() -> None:
        try:
            if prebuild:
                # Compiles on the GPU host's CPUs while the GPU works through the jobs ahead of this one.
                Queue(jobs.build_queue(profile), connection=django_rq.get_connection(jobs.WEB_QUEUE),
                      serializer=JSONSerializer).enqueue(
                    jobs.PREBUILD, spec, job_timeout=BUILD_JOB_TIMEOUT_S, result_ttl=settings.ARENA_JOB_RESULT_TTL_S,
                    description=f"build for {description}")
            django_rq.get_queue(PROFILES[profile].queue).enqueue(
                jobs.EVALUATE, spec, submission_id, nonce, job_id=job_id, job_timeout=timeout,
                result_ttl=settings.ARENA_JOB_RESULT_TTL_S, failure_ttl=settings.ARENA_JOB_RESULT_TTL_S,
                description=description,
            )
        except RedisError:
            logger.exception("could not enqueue submission %s; the reaper will retry", submission_id)

    transaction.on_commit(enqueue)


def job_discard_after_commit(profile: str, job_id: str) -> None:
    """Takes a job that is no longer wanted off its queue once the transaction commits. A job a worker already
    started is left to finish (its report is then ignored): stopping it would kill the work horse but not the rank
    processes it started."""
    if not job_id or profile not in PROFILES:
        return

    def discard() -> None:
        try:
            job = Job.fetch(job_id, connection=django_rq.get_connection(PROFILES[profile].queue),
                            serializer=JSONSerializer)
            if job.get_status() in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED):
                job.cancel()
        except (NoSuchJobError, RedisError, InvalidJobOperation):
            pass

    transaction.on_commit(discard)
