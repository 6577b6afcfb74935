"""The reaper of evaluations: the lifecycle's one reaper (``leaderboard.lifecycle.reaper``) with a submission's hooks.

It compares the database with Redis for every unfinished submission that has a job (rows the fair queue holds have
none yet; each pass releases those whose users have room again) and settles each disagreement as a platform failure
of the current attempt (``results.submission_fail``): the submission is queued again as a new job while it has
attempts left, and ends as infra_error after the last. A finished job whose reply was lost has its result recovered.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from itertools import chain
from typing import Any, Iterable

from django.db import transaction
from rq.job import Job

from evaluator.contract.jobs import RECORD_RESULT
from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict
from leaderboard.lifecycle.reaper import Pass, Reaper, ReapReport, job_failure
from leaderboard.models import Submission
from leaderboard.rankings.services import run_scores_request_stale
from leaderboard.submissions import queueing, results, services

logger = logging.getLogger(__name__)

PLATFORM_FAILURE = "This is a platform failure, not a verdict on your solution; submit it again later."


def _where(submission: Submission, job: Job | None = None) -> str:
    worker = submission.worker or (job.worker_name if job is not None else "") or ""
    return f" on worker {worker}" if worker else ""


class SubmissionReaper(Reaper[Submission]):
    work = queueing.SUBMISSION
    reply, reply_body = RECORD_RESULT, "document"
    job_noun, reply_noun, sentences = "evaluation job", "result", True

    def rows(self, now: datetime, grace: timedelta) -> Iterable[Submission]:
        # held rows (the fair queue: no job yet, queueing.held_rows) wait for a slot, not for a lost job
        queued = Submission.objects.filter(
            state=Submission.State.QUEUED, created_at__lt=now - grace, enqueue_count__gt=0
        ).order_by("id")
        fresh = now - grace  # just (re-)enqueued: give the job time to show up
        waiting = (s for s in queued if not (s.enqueued_at and s.enqueued_at > fresh))
        return chain(waiting, Submission.objects.filter(state=Submission.State.RUNNING).order_by("id"))

    def reap_row(self, row: Submission, run: Pass) -> None:
        if row.profile not in PROFILES:
            logger.error("submission %s has an unknown profile %r; the reaper leaves it", row.pk, row.profile)
            return
        super().reap_row(row, run)

    def last_sign(self, row: Submission) -> datetime:
        return row.heartbeat_at or row.started_at or row.enqueued_at or row.created_at

    def limit_s(self, row: Submission) -> int:
        return row.job_timeout_s

    def fail_attempt(self, row: Submission, message: str, report: ReapReport) -> None:
        """The current attempt failed on the platform's side: a new attempt, or infra_error after the last."""
        results.submission_fail(submission_id=row.pk, message=f"{message} {PLATFORM_FAILURE}", job_id=row.job_id)
        now = Submission.objects.filter(pk=row.pk).values("state", "verdict", "job_id").first() or {}
        if now.get("state") == Submission.State.QUEUED and now.get("job_id") != row.job_id:
            report.requeued.append(row.pk)
        elif now.get("state") == Submission.State.FINISHED and now.get("verdict") == Verdict.INFRA_ERROR.value:
            report.failed.append(row.pk)

    def recover(self, row: Submission, job: Job, body: dict[str, Any], report: ReapReport) -> None:
        if results.result_record(submission_id=row.pk, document=body, job_id=job.id, current_only=True) is not None:
            report.recovered.append(row.pk)
        else:  # an infra_error document: retried like any other
            report.requeued.append(row.pk)

    def mark_running(self, row: Submission, job: Job) -> None:
        services.submission_mark_running(
            submission_id=row.pk, worker=job.worker_name or "", started_at=job.started_at, job_id=job.id
        )

    def alive(self, row: Submission, job: Job) -> None:
        if job.last_heartbeat and (row.heartbeat_at is None or job.last_heartbeat > row.heartbeat_at):
            Submission.objects.filter(pk=row.pk, job_id=job.id).update(heartbeat_at=job.last_heartbeat)

    def after_pass(self, run: Pass) -> None:
        with transaction.atomic():  # slots freed by what ended above, or by cancels
            run.report.released = queueing.queued_release()
        run.report.runs_rescored = run_scores_request_stale(older_than_s=run.grace.total_seconds())

    def describe(self, report: ReapReport) -> str:
        return (
            f"checked {report.checked}: re-enqueued {report.requeued or 'none'}, failed {report.failed or 'none'}, "
            f"recovered results of {report.recovered or 'none'}"
            + (f", released from the fair queue {report.released}" if report.released else "")
            + (f", runs asked to be scored again: {report.runs_rescored}" if report.runs_rescored else "")
        )

    def says_silent(self, row: Submission, now: datetime) -> str:
        silent = int((now - self.last_sign(row)).total_seconds())
        who = f"Worker {row.worker}" if row.worker else "The worker"
        return (
            f"{who} started this evaluation {silent} s ago and never reported a result; Redis no longer knows its "
            f"job, and the limit is {row.job_timeout_s} s."
        )

    def says_ended(self, row: Submission, job: Job, status: Any) -> str:
        return (
            f"The evaluation job {getattr(status, 'value', status)}{_where(row, job)} before it could report a "
            f"result ({job_failure(job)})."
        )

    def says_abandoned(self, row: Submission, job: Job) -> str:
        last = job.last_heartbeat or job.started_at
        when = f" at {last:%H:%M:%S} UTC" if last else ""
        return (
            f"The worker evaluating this submission{_where(row, job)} stopped sending heartbeats{when} (it was "
            f"killed, or its host went down)."
        )


SUBMISSIONS = SubmissionReaper()


def submissions_reap(*, now: datetime | None = None) -> ReapReport:
    """Makes Redis agree with the database again for every submission (:class:`SubmissionReaper`). Safe to run at any
    time, from many places at once (every change re-checks the row under a lock and names the attempt it is about)."""
    return SUBMISSIONS.reap(now=now)
