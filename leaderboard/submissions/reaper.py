"""The reaper of evaluations: the database says what should be queued or running; Redis says what is.

It compares the two for every unfinished submission that has a job (rows the fair queue holds have none yet; each
pass releases those whose users have room again) and settles each disagreement as a platform failure of the
current attempt (``results.submission_fail``): the submission is queued again as a new job while it has attempts
left, and ends as infra_error after the last.
Liveness comes from RQ's own worker heartbeat: while a worker runs a job it keeps pushing the job's entry in the
queue's StartedJobRegistry into the future (a forking worker: every 30 s, to 60-90 s ahead) and stamps
job.last_heartbeat; an entry left behind by the clock means the worker is gone. No extra traffic is needed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import django_rq
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

from evaluator.contract.jobs import RECORD_RESULT
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict, trim
from leaderboard.models import Submission
from leaderboard.rankings.services import run_scores_request_stale
from leaderboard.submissions import queueing, results, services
from leaderboard.submissions.signatures import signed_envelope

logger = logging.getLogger(__name__)


@dataclass
class ReapReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)  # held rows put on their queue (the fair queue)
    checked: int = 0
    runs_rescored: int = 0  # runs whose scoring job was asked for again (lost with Redis, or never enqueued)

    def __str__(self) -> str:
        return (f"checked {self.checked}: re-enqueued {self.requeued or 'none'}, failed {self.failed or 'none'}, "
                f"recovered results of {self.recovered or 'none'}"
                + (f", released from the fair queue {self.released}" if self.released else "")
                + (f", runs asked to be scored again: {self.runs_rescored}" if self.runs_rescored else ""))


@dataclass
class _Redis:
    """What one reaper pass reads from Redis, once per queue."""

    waiting: dict[str, set[str]] = field(default_factory=dict)

    def queued_ids(self, queue_name: str) -> set[str]:
        if queue_name not in self.waiting:
            self.waiting[queue_name] = set(django_rq.get_queue(queue_name).get_job_ids())
        return self.waiting[queue_name]


PLATFORM_FAILURE = "This is a platform failure, not a verdict on your solution; submit it again later."


def _job(submission: Submission) -> Job | None:
    if not submission.job_id:
        return None
    try:
        return Job.fetch(submission.job_id, connection=django_rq.get_connection(PROFILES[submission.profile].queue),
                         serializer=JSONSerializer)
    except NoSuchJobError:
        return None


def job_failure(job: Job) -> str:
    """The last line of the job's failure (its exception), for a message."""
    latest = job.latest_result()
    text = (latest.exc_string if latest is not None else None) or ""
    last_line = text.strip().splitlines()[-1] if text.strip() else job.get_status(refresh=False) or "unknown"
    return trim(str(last_line), 500)


def job_abandoned(job: Job, now: datetime) -> bool:
    """True when the worker running this started job stopped heartbeating: its StartedJobRegistry entry expired,
    or (no entry at all) its last heartbeat is older than the job's limit plus RQ's minute of slack."""
    registry = StartedJobRegistry(job.origin, connection=job.connection)
    if job.id in registry.get_expired_job_ids(now.timestamp()):
        return True
    if job.id in registry.get_job_ids(cleanup=False):
        return False
    last = job.last_heartbeat or job.started_at
    return last is None or now - last > timedelta(seconds=max(job.timeout or 0, 0) + 90)


def _attempt_failed(submission: Submission, message: str, report: ReapReport) -> None:
    """The current attempt failed on the platform's side: a new attempt, or infra_error after the last."""
    results.submission_fail(submission_id=submission.pk, message=f"{message} {PLATFORM_FAILURE}",
                            job_id=submission.job_id)
    row = Submission.objects.filter(pk=submission.pk).values("state", "verdict", "job_id").first() or {}
    if row.get("state") == Submission.State.QUEUED and row.get("job_id") != submission.job_id:
        report.requeued.append(submission.pk)
    elif row.get("state") == Submission.State.FINISHED and row.get("verdict") == Verdict.INFRA_ERROR.value:
        report.failed.append(submission.pk)


def _where(submission: Submission, job: Job | None = None) -> str:
    worker = submission.worker or (job.worker_name if job is not None else "") or ""
    return f" on worker {worker}" if worker else ""


def _reap_ended_job(submission: Submission, job: Job, status: str, now: datetime, grace: timedelta,
                    report: ReapReport) -> None:
    """The job ended but the row did not: its reply was lost (recover the return value) or never sent."""
    if status == JobStatus.FINISHED:
        if job.ended_at and now - job.ended_at < grace:
            return  # its reply is probably still on the web queue
        # the worker's signed result, for this submission, job and nonce; anything else in Redis is not a result
        document = signed_envelope(RECORD_RESULT, submission.pk, job.return_value(), "document")
        if isinstance(document, dict):
            if results.result_record(submission_id=submission.pk, document=document, job_id=job.id,
                                     current_only=True) is not None:
                report.recovered.append(submission.pk)
            else:  # an infra_error document: retried like any other
                report.requeued.append(submission.pk)
            return
        _attempt_failed(submission, "The evaluation job finished but its result was lost.", report)
        return
    _attempt_failed(submission, f"The evaluation job {getattr(status, 'value', status)}{_where(submission, job)} "
                                f"before it could report a result ({job_failure(job)}).", report)


def _reap_started_job(submission: Submission, job: Job, now: datetime, report: ReapReport) -> None:
    if job_abandoned(job, now):
        last = job.last_heartbeat or job.started_at
        when = f" at {last:%H:%M:%S} UTC" if last else ""
        _attempt_failed(submission, f"The worker evaluating this submission{_where(submission, job)} stopped sending "
                                    f"heartbeats{when} (it was killed, or its host went down).", report)
        return
    if submission.state == Submission.State.QUEUED:  # the worker's "running" message was lost or is late
        services.submission_mark_running(submission_id=submission.pk, worker=job.worker_name or "",
                                started_at=job.started_at, job_id=job.id)
    if job.last_heartbeat and (submission.heartbeat_at is None or job.last_heartbeat > submission.heartbeat_at):
        Submission.objects.filter(pk=submission.pk, job_id=job.id).update(heartbeat_at=job.last_heartbeat)


def _reap_one(submission: Submission, now: datetime, grace: timedelta, redis: _Redis, report: ReapReport) -> None:
    if submission.profile not in PROFILES:
        logger.error("submission %s has an unknown profile %r; the reaper leaves it", submission.pk, submission.profile)
        return
    job = _job(submission)
    if job is None:
        if submission.state == Submission.State.QUEUED:
            _attempt_failed(submission, "The evaluation job was lost from the queue before a worker took it "
                                        "(Redis restarted or dropped it).", report)
            return
        last_sign = submission.heartbeat_at or submission.started_at or submission.enqueued_at or submission.created_at
        if now - last_sign > timedelta(seconds=submission.job_timeout_s) + grace:
            silent = int((now - last_sign).total_seconds())
            who = f"Worker {submission.worker}" if submission.worker else "The worker"
            _attempt_failed(submission, f"{who} started this evaluation {silent} s ago and never reported a result; "
                                        f"Redis no longer knows its job, and the limit is "
                                        f"{submission.job_timeout_s} s.", report)
        return
    status = job.get_status(refresh=False)
    if status in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        _reap_ended_job(submission, job, status, now, grace, report)
    elif status == JobStatus.STARTED:
        _reap_started_job(submission, job, now, report)
    elif status == JobStatus.QUEUED and submission.state == Submission.State.QUEUED:
        if job.id not in redis.queued_ids(job.origin):
            job.delete()  # its hash survived but the queue lost it
            _attempt_failed(submission, "The evaluation job was lost from the queue before a worker took it.", report)
    # scheduled or deferred: RQ holds it and will queue it


def submissions_reap(*, now: datetime | None = None) -> ReapReport:
    """Makes Redis agree with the database again. Queued rows whose job Redis lost, running rows whose worker
    stopped heartbeating or whose job failed without a reply: each is a failed attempt, queued again while it has
    attempts left (settings.ARENA_MAX_ENQUEUES) and ended as infra_error after. A finished job whose reply was lost
    has its result recovered. Safe to run at any time, from many places at once (every change re-checks the row
    under a lock and names the attempt it is about).
    """
    now = now or timezone.now()
    grace = timedelta(seconds=settings.ARENA_REAP_GRACE_S)
    report = ReapReport()
    redis = _Redis()
    # held rows (the fair queue: no job yet, queueing.held_rows) wait for a slot, not for a lost job
    queued = Submission.objects.filter(state=Submission.State.QUEUED, created_at__lt=now - grace,
                                       enqueue_count__gt=0)
    for submission in queued.order_by("id"):
        if submission.enqueued_at and submission.enqueued_at > now - grace:
            continue  # just (re-)enqueued: give the job time to show up
        report.checked += 1
        with transaction.atomic():  # what it enqueues goes to Redis when this commits
            _reap_one(submission, now, grace, redis, report)
    for submission in Submission.objects.filter(state=Submission.State.RUNNING).order_by("id"):
        report.checked += 1
        with transaction.atomic():
            _reap_one(submission, now, grace, redis, report)
    with transaction.atomic():  # slots freed by what ended above, or by cancels
        report.released = queueing.queued_release()
    report.runs_rescored = run_scores_request_stale(older_than_s=grace.total_seconds())
    return report
