"""One reaper for every kind of queued work: the database says what should be queued or running; Redis says what is.

:class:`Reaper` is the one pass; a kind subclasses it and fills in its hooks (which rows to look at, what each
disagreement is called in the kind's words, how the kind records a failed attempt, a recovered reply or a job that
died). Each disagreement is settled once, under the row's lock, for the attempt it is about:

- the job is gone from Redis: lost before a worker took it (the row waiting), or its worker went silent past the limit
  (the row running): a platform failure (``fail_attempt``: a new attempt while attempts are left);
- the job finished but its reply never came: the signed reply is recovered from the job's return value (``recover``),
  else a platform failure;
- the job failed, was stopped or cancelled without a reply: ``job_ended``;
- the job is started but its worker stopped heartbeating: a platform failure; else a lost "running" message is made
  good and the row's heartbeat follows the job's;
- the job is queued in its hash but its queue lost it: deleted, and a platform failure.

Liveness comes from RQ's own worker heartbeat: while a worker runs a job it keeps pushing the job's entry in the
queue's StartedJobRegistry into the future (a forking worker: every 30 s, to 60-90 s ahead) and stamps
job.last_heartbeat; an entry left behind by the clock means the worker is gone. No extra traffic is needed.

A kind that is never retried and watched by its deadline alone (an unranked test) overrides :meth:`Reaper.reap_row`.
:func:`reap_every_kind` runs one pass of each (``manage.py reap``). Safe to run at any time, from many places at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Iterable, Sequence

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry

from evaluator.contract.result import trim
from leaderboard.lifecycle import queues
from leaderboard.lifecycle.signatures import signed_envelope
from leaderboard.lifecycle.work import Row, Work

logger = logging.getLogger(__name__)

ENDED = (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED)
LOST = "was lost from the queue before a worker took it"
WHY_LOST = "Redis restarted or dropped it"


@dataclass
class ReapReport:
    """What one pass over one kind did; its text is the kind's (:meth:`Reaper.describe`)."""

    kind: str
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)  # held rows put on their queue (the fair queue)
    checked: int = 0
    runs_rescored: int = 0  # runs whose scoring job was asked for again (lost with Redis, or never enqueued)
    text: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.requeued or self.failed or self.recovered or self.released)

    def __str__(self) -> str:
        return self.text


@dataclass
class Pass:
    """One pass's moment, slack and what it read from Redis (each queue's waiting job ids, read once)."""

    now: datetime
    grace: timedelta
    report: ReapReport
    waiting: dict[str, set[str]] = field(default_factory=dict)

    def queued_ids(self, queue: str) -> set[str]:
        if queue not in self.waiting:
            self.waiting[queue] = set(queues.queue_named(queue).get_job_ids())
        return self.waiting[queue]


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


class Reaper(Generic[Row]):
    """One kind's reaper: the pass is here, the kind's hooks below it."""

    work: Work[Row]
    reply: str  # the contract's name of the kind's final reply (what a finished job's return value is signed as)
    reply_body: str  # the key of that reply's body in the return value: "document", "report"
    # The kind's words for its messages (those that depend on the row are the says_* hooks):
    job_noun: str  # "evaluation job", "check job"
    reply_noun: str  # "result", "report"
    sentences = False  # True: each message starts with a capital and ends with a full stop

    # --- the pass -----------------------------------------------------------------------------------------------

    def reap(self, *, now: datetime | None = None) -> ReapReport:
        """Makes Redis agree with the database again for every row :meth:`rows` names, one transaction per row (what
        it enqueues goes to Redis when that commits), then :meth:`after_pass`."""
        now = now or timezone.now()
        grace = timedelta(seconds=settings.ARENA_REAP_GRACE_S)
        run = Pass(now=now, grace=grace, report=ReapReport(kind=self.work.name))
        for row in self.rows(now, grace):
            run.report.checked += 1
            with transaction.atomic():
                self.reap_row(row, run)
        self.after_pass(run)
        run.report.text = self.describe(run.report)
        return run.report

    def reap_row(self, row: Row, run: Pass) -> None:
        """Settles one row against its job in Redis (the module's doc says how)."""
        job = queues.job_fetch(self.work.job_id(row), self.work.queue_of(row))
        if job is None:
            if getattr(row, "state") == self.work.waiting:
                self.fail_attempt(row, self.say(f"the {self.job_noun} {LOST} ({WHY_LOST})"), run.report)
            elif run.now - self.last_sign(row) > timedelta(seconds=self.limit_s(row)) + run.grace:
                self.fail_attempt(row, self.says_silent(row, run.now), run.report)
            return
        status = job.get_status(refresh=False)
        if status == JobStatus.FINISHED:
            if job.ended_at and run.now - job.ended_at < run.grace:
                return  # its reply is probably still on the web queue
            body = signed_envelope(self.reply, row.pk, job.return_value(), self.reply_body)  # the worker's, signed
            if isinstance(body, dict):
                self.recover(row, job, body, run.report)
            else:
                self.fail_attempt(
                    row, self.say(f"the {self.job_noun} finished but its {self.reply_noun} was lost"), run.report
                )
        elif status in ENDED:
            self.job_ended(row, job, status, run.report)
        elif status == JobStatus.STARTED:
            if job_abandoned(job, run.now):
                self.fail_attempt(row, self.says_abandoned(row, job), run.report)
                return
            if getattr(row, "state") == self.work.waiting:  # the worker's "running" message was lost or is late
                self.mark_running(row, job)
            self.alive(row, job)
        elif status == JobStatus.QUEUED and getattr(row, "state") == self.work.waiting:
            if job.id not in run.queued_ids(job.origin):
                job.delete()  # its hash survived but the queue lost it
                self.fail_attempt(row, self.say(f"the {self.job_noun} {LOST}"), run.report)
        # scheduled or deferred: RQ holds it and will queue it

    def say(self, text: str) -> str:
        """``text`` as the kind writes its messages."""
        return f"{text[0].upper()}{text[1:]}." if self.sentences else text

    # --- the kind's hooks ---------------------------------------------------------------------------------------

    def rows(self, now: datetime, grace: timedelta) -> Iterable[Row]:
        """The rows to look at in this pass (waiting and running ones the grace period has not just touched)."""
        raise NotImplementedError

    def last_sign(self, row: Row) -> datetime:
        """When the row last showed life (for a running row whose job Redis lost)."""
        raise NotImplementedError

    def limit_s(self, row: Row) -> int:
        """How long its job may run."""
        raise NotImplementedError

    def fail_attempt(self, row: Row, message: str, report: ReapReport) -> None:
        """A platform failure of the row's current attempt: record it (retried while attempts are left)."""
        raise NotImplementedError

    def recover(self, row: Row, job: Job, body: dict[str, Any], report: ReapReport) -> None:
        """Store the signed reply recovered from a finished job."""
        raise NotImplementedError

    def job_ended(self, row: Row, job: Job, status: Any, report: ReapReport) -> None:
        """The job failed, was stopped or cancelled before replying (default: a platform failure)."""
        self.fail_attempt(row, self.says_ended(row, job, status), report)

    def mark_running(self, row: Row, job: Job) -> None:
        """Make good a lost "running" message from what Redis knows of the started job."""
        self.work.mark_running(row_id=row.pk, worker=job.worker_name or "", started=job.started_at, job_id=job.id)

    def alive(self, row: Row, job: Job) -> None:
        """The job runs and its worker heartbeats (default: nothing more to do)."""

    def after_pass(self, run: Pass) -> None:
        """After every row (default: nothing)."""

    def describe(self, report: ReapReport) -> str:
        """The report's text, as ``manage.py reap`` prints it."""
        return (
            f"{self.work.name}: checked {report.checked}: re-enqueued {report.requeued or 'none'}, failed "
            f"{report.failed or 'none'}, recovered {report.recovered or 'none'}"
        )

    def says_silent(self, row: Row, now: datetime) -> str:
        raise NotImplementedError

    def says_ended(self, row: Row, job: Job, status: Any) -> str:
        raise NotImplementedError

    def says_abandoned(self, row: Row, job: Job) -> str:
        raise NotImplementedError


def reap_every_kind(reapers: Sequence[Reaper[Any]], *, now: datetime | None = None) -> list[ReapReport]:
    """One pass of each kind's reaper, in order; their reports."""
    return [reaper.reap(now=now) for reaper in reapers]
