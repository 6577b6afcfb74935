"""The Redis side of queued work: a queue by its name, a job fetched by its id, jobs put on their queues once the
transaction that wrote their row commits, and a job no longer wanted taken off. Jobs carry plain JSON (ids, a spec's
dict, a nonce), never ORM objects; their names come from ``evaluator.contract.jobs``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import django_rq
from django.conf import settings
from django.db import transaction
from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from evaluator.contract.jobs import WEB_QUEUE

logger = logging.getLogger(__name__)


def queue_named(name: str) -> Queue:
    """The queue ``name``: the one settings' ``RQ_QUEUES`` configures, else (a profile's build or test lane) a queue
    of that name on the web queue's Redis, JSON only."""
    if name in settings.RQ_QUEUES:
        return django_rq.get_queue(name)
    return Queue(name, connection=django_rq.get_connection(WEB_QUEUE), serializer=JSONSerializer)


def job_fetch(job_id: str, queue: str) -> Job | None:
    """The job ``job_id`` as Redis knows it, or None when Redis lost it (or it never got there)."""
    if not job_id:
        return None
    try:
        return Job.fetch(job_id, connection=queue_named(queue).connection, serializer=JSONSerializer)
    except NoSuchJobError:
        return None


@dataclass(frozen=True)
class JobOrder:
    """One job to put on a queue: the function's contract name, its JSON arguments and its limit."""

    queue: str
    function: str
    args: tuple[Any, ...]
    timeout: int
    description: str
    job_id: str | None = None  # None: RQ names it (a job no row follows, e.g. a prebuild)


def enqueue_after_commit(orders: Sequence[JobOrder], *, if_redis_fails: str) -> None:
    """Puts the jobs on their queues, in order, once the transaction commits. If Redis is down then, the rows keep job
    ids Redis does not know; ``if_redis_fails`` says in the log what becomes of them (the reaper settles them)."""
    ttl = settings.ARENA_JOB_RESULT_TTL_S

    def enqueue() -> None:
        try:
            for order in orders:
                queue_named(order.queue).enqueue(
                    order.function,
                    *order.args,
                    job_id=order.job_id,
                    job_timeout=order.timeout,
                    result_ttl=ttl,
                    failure_ttl=ttl,
                    description=order.description,
                )
        except RedisError:
            logger.exception("could not enqueue %s; %s", orders[-1].description, if_redis_fails)

    transaction.on_commit(enqueue)


def job_discard_after_commit(job_id: str, queue: str) -> None:
    """Takes a job that is no longer wanted off its queue once the transaction commits. A job a worker already
    started is left to finish (its report is then ignored): stopping it would kill the work horse but not the
    processes it started."""
    if not job_id:
        return

    def discard() -> None:
        try:
            job = job_fetch(job_id, queue)
            if job is not None and job.get_status() in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED):
                job.cancel()
        except (RedisError, InvalidJobOperation):
            pass

    transaction.on_commit(discard)
