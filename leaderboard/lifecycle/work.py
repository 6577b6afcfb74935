"""A kind of queued work and its life on the web side, written once for every kind.

A kind (a submission, a test, a proposal's check) is a :class:`Work`: its model, how its fields are named, its
waiting and running states, and the jobs a row of it puts on the queues (the ``orders`` hook). Every kind then:

- gets its next job id (``<prefix>-<pk>-<attempt>``, or ``<prefix>-<pk>`` for a kind that is never retried) and its
  jobs reach Redis once the transaction commits (:meth:`Work.enqueue_after_commit`);
- moves from waiting to running when its current job's worker says it started (:meth:`Work.mark_running`; a late
  or repeated message, or one from a replaced attempt, changes nothing);
- on a platform failure (the job lost, its worker gone), goes back to waiting as a new job while it has attempts left
  (settings.ARENA_MAX_ENQUEUES) and ends after the last (:meth:`Work.platform_failure`);
- has a job it no longer needs taken off its queue (:meth:`Work.discard_after_commit`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Any, Callable, Generic, Literal, Mapping, TypeVar

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from evaluator.contract.result import trim
from leaderboard.lifecycle import queues

logger = logging.getLogger(__name__)

Row = TypeVar("Row", bound=models.Model)


def job_timeout_s(phase_limits: Mapping[str, float]) -> int:
    """An RQ job's limit: settings.ARENA_JOB_TIMEOUT_FACTOR (about 1.2) times the sum of the evaluator's phase limits,
    so the phases time out first."""
    return math.ceil(settings.ARENA_JOB_TIMEOUT_FACTOR * sum(phase_limits.values()))


def started_at(value: Any) -> datetime:
    """When a worker says it started: a datetime as is, seconds since the epoch converted, anything else now."""
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromtimestamp(float(value), tz=dt_timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return timezone.now()


@dataclass(frozen=True)
class Work(Generic[Row]):
    """One kind of queued work: names, states and the hooks that differ from kind to kind."""

    model: type[Row]
    name: str  # in logs: "submission", "test", "proposal"
    job_prefix: str  # job ids are "<prefix>-<pk>-<attempt>" (or "<prefix>-<pk>" when not numbered)
    waiting: str  # the state of a row whose job is on (or waiting for) its queue
    running: str  # the state once its worker said it started
    orders: Callable[[Row], list[queues.JobOrder]]  # the jobs a row puts on the queues (its job id already set)
    queue_of: Callable[[Row], str]  # the queue its current job is on
    if_redis_fails: str  # what becomes of a row whose jobs could not reach Redis (for the log)
    job_id_field: str = "job_id"
    count_field: str | None = "enqueue_count"  # None: one attempt only, job id "<prefix>-<pk>"
    enqueued_at_field: str | None = "enqueued_at"
    worker_field: str = "worker"
    worker_max: int = 255
    started_field: str | None = "started_at"
    heartbeat_field: str | None = None
    touched: tuple[str, ...] = ()  # fields every save must include (an auto_now ``updated_at``)
    attempt_word: str = "Attempt"  # in the last attempt's note: "(Attempt 3 of 3: every attempt failed ...)"
    every_word: str = "attempt"

    # --- the job id and the enqueue ---------------------------------------------------------------------------

    def job_id(self, row: Row) -> str:
        return getattr(row, self.job_id_field)

    def attempts(self, row: Row) -> int:
        return getattr(row, self.count_field) if self.count_field else 1

    def enqueue_after_commit(self, row: Row) -> None:
        """Gives the row its next job id now and puts its jobs on their queues once the transaction commits. If
        Redis is down then, the row keeps a job id Redis does not know, which the reaper settles later: the
        database decides what is queued."""
        fields = [self.job_id_field]
        if self.count_field:
            setattr(row, self.count_field, getattr(row, self.count_field) + 1)
            fields.append(self.count_field)
            setattr(row, self.job_id_field, f"{self.job_prefix}-{row.pk}-{getattr(row, self.count_field)}")
        else:
            setattr(row, self.job_id_field, f"{self.job_prefix}-{row.pk}")
        if self.enqueued_at_field:
            setattr(row, self.enqueued_at_field, timezone.now())
            fields.append(self.enqueued_at_field)
        row.save(update_fields=fields + list(self.touched))
        queues.enqueue_after_commit(self.orders(row), if_redis_fails=self.if_redis_fails)

    def discard_after_commit(self, row: Row) -> None:
        """Takes the row's current job off its queue once the transaction commits (a started one runs on)."""
        queues.job_discard_after_commit(self.job_id(row), self.queue_of(row))

    # --- mark running -----------------------------------------------------------------------------------------

    def mark_running(
        self,
        *,
        row_id: int,
        job_id: str | None,
        worker: str,
        started: Any,
        on_running: Callable[[Row], None] | None = None,
        otherwise: Callable[[Row, str, datetime], None] | None = None,
    ) -> Row | None:
        """A worker started ``job_id``. Only a waiting row moves to running (then ``on_running`` runs, in the same
        transaction); a late or repeated message changes nothing but what ``otherwise`` does with it, and one from
        a job that is no longer the row's current one changes nothing at all."""
        when, worker = started_at(started), (worker or "")[: self.worker_max]
        with transaction.atomic():
            row = self.model._default_manager.select_for_update().filter(pk=row_id).first()
            if row is None:
                logger.warning("mark_running for unknown %s %s", self.name, row_id)
                return None
            current = self.job_id(row)
            if job_id and current and job_id != current:
                return row  # an attempt the reaper already replaced
            if getattr(row, "state") != self.waiting:
                if otherwise is not None:
                    otherwise(row, worker, when)
                return row
            self._move(row, self.running, worker, when)
            if on_running is not None:
                on_running(row)
        return row

    # --- a platform failure: retried, then final ----------------------------------------------------------------

    def platform_failure(self, row: Row, message: str) -> tuple[Literal["requeued", "final"], str]:
        """The row's current attempt failed on the platform's side (call with the row locked). While attempts are
        left it goes back to waiting as a new job: ``("requeued", message)``. After the last: ``("final", message)``
        with a note that every attempt failed, for the kind to end the row with."""
        attempts = self.attempts(row)
        if self.count_field and attempts < settings.ARENA_MAX_ENQUEUES:
            logger.warning(
                "%s %s: attempt %s failed on the platform's side (%s); enqueueing attempt %s",
                self.name,
                row.pk,
                attempts,
                trim(message, 300),
                attempts + 1,
            )
            self.requeue(row)
            return "requeued", message
        if attempts > 1:
            message = (
                f"{message} ({self.attempt_word} {attempts} of {settings.ARENA_MAX_ENQUEUES}: every "
                f"{self.every_word} failed on the platform's side.)"
            )
        return "final", message

    def requeue(self, row: Row) -> None:
        """Back to waiting, as a new job (its worker and times cleared)."""
        self._move(row, self.waiting, "", None)
        self.enqueue_after_commit(row)

    def _move(self, row: Row, state: str, worker: str, when: datetime | None) -> None:
        """Saves the row in ``state`` with its worker and its start (and heartbeat) times."""
        setattr(row, "state", state)
        setattr(row, self.worker_field, worker)
        times = [name for name in (self.started_field, self.heartbeat_field) if name]
        for name in times:
            setattr(row, name, when)
        row.save(update_fields=["state", self.worker_field, *times, *self.touched])
